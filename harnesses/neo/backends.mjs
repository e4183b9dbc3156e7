// Neo's backends: one Chroma collection each, opened empty, selected before each call with the
// backend's spoof mode and revision map, dropped on close; each kit call run as the principal's
// request context with its store accounting; a tool called as Neo's KB server dispatches it; a
// hit as the kit reads it.

import {FaultSwitch, internal, invalid} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {instrumentCollection, newCall, requestScope, runInternal} from './calls.mjs';
import {isZodError, toolResultError, translateThrown, zodRefusal} from './errors.mjs';
import {log} from './log.mjs';
import {ensureStarted, neo} from './setup.mjs';

const collectionPrefix = `kbconform-neo-${process.pid}`;
let backendCounter = 0;
let cachedCollection = null;   // the collection name Neo's ChromaManager has cached

async function selectBackend(backend) {
    const {kbConfig, ChromaManager, IngestionService} = neo;
    if (cachedCollection !== backend.collection) {
        kbConfig.collectionName = backend.collection;
        ChromaManager.invalidateKnowledgeBaseCollectionCache();
        // Resolve the collection outside the kit's call, so switching between backends costs
        // the backend no store call of its own.
        const collection = await runInternal('select', () => ChromaManager.getKnowledgeBaseCollection());
        instrumentCollection(collection);
        cachedCollection = backend.collection;
    }
    kbConfig.spoofRejectionMode = backend.spoofMode;
    IngestionService.revisionResolver = backend.revisionMap ? revisionResolverFor(backend) : null;
}

// Neo's revision resolver interface (IngestionService.resolveRevisionTombstones) played back
// from the open's revision map.
function revisionResolverFor(backend) {
    return {
        async resolveDeletedPaths({baseRevision, headRevision, tenantContext}) {
            const repoSlug = tenantContext?.repoSlug;
            const call     = requestScope.getStore();
            if (call) call.resolverCalls.push({repoSlug, baseRevision, headRevision});
            const entry = backend.revisionMap.find(item =>
                item.repoSlug === repoSlug && item.baseRevision === baseRevision && item.headRevision === headRevision);
            if (!entry) {
                const error = new Error(`KB_REVISION_BOUNDARY_UNAVAILABLE: unknown revisions ${baseRevision}..${headRevision}`);
                error.code  = 'KB_REVISION_BOUNDARY_UNAVAILABLE';
                throw error;
            }
            return entry.deletedPaths.map(sourcePath => ({sourcePath}));
        }
    };
}

// The principal as the request context Neo's knowledge-base server builds from the identity a
// request claims: `{userId, username, source}` from the transport's auth
// (ai/mcp/server/knowledge-base/Server.mjs:89-97, buildRequestContext). The KB server puts no
// `agentIdentityNodeId` into it, so neither does the harness: the kit's agent identity reaches
// Neo nowhere, as it reaches a deployed KB server nowhere. Neo reads no role and no readable
// namespaces. No principal: the call runs outside any request context, as a request without
// identity does (buildRequestContext returns {} and services fall through to single-tenant mode).
// A malformed principal is checked no more than Neo checks it: an object's string tenantId is
// the user it claims, whatever its value ("*" is user "*"); anything else (a bare string, an
// object without a string tenantId) names no user, and the call runs with what
// buildRequestContext returns then, `{}` (to Neo's services, the same as no context).
function contextOf(principal) {
    if (principal === null || principal === undefined) return null;
    const userId = typeof principal === 'object' && !Array.isArray(principal) &&
        typeof principal.tenantId === 'string' ? principal.tenantId : undefined;
    // buildRequestContext: `if (!reqAuth?.userId) return {};`
    if (!userId) return {};
    return {userId, username: userId, source: 'oidc'};
}

async function asPrincipal(principal, fn) {
    const context = contextOf(principal);
    return context ? neo.RequestContextService.run(context, fn) : fn();
}

/** Runs `fn` as one kit call on `backend`: Neo's settings for the backend, the store accounting. */
export async function onBackend(operation, backend, principal, fn) {
    await selectBackend(backend);
    const call = newCall(operation, backend);
    try {
        const value = await requestScope.run(call, () => asPrincipal(principal, () => fn(call)));
        return value;
    } catch (error) {
        throw translateThrown(error, call, operation);
    }
}

// A hit as the kit reads it. Neo stores a chunk's text in its metadata (`content`), not in
// Chroma's document slot (VectorService.embedChunks upserts ids, embeddings and metadatas), so
// `document` is Chroma's document when Neo returned one, else the text Neo keeps in
// metadata.content, else null.
export function hitOf(id, content, metadata) {
    const meta = metadata && typeof metadata === 'object' ? metadata : {};
    const document = typeof content === 'string' ? content
        : typeof meta.content === 'string' ? meta.content
        : null;
    return {id: String(id), document, metadata: meta};
}

// A ranked source from queryDocuments: Neo names the source file and gives the top chunk's
// metadata. Hits Neo adds from its own install directory (lexical rescue) carry no chunk id:
// their id is the source path Neo reports.
export function hitOfRanked(result) {
    const metadata = result?.metadata || {};
    const id = typeof metadata.id === 'string' && metadata.id ? metadata.id : result?.source;
    return hitOf(id, undefined, metadata);
}

/** Calls an MCP tool through Neo's toolService.mjs `callTool`, as the KB server dispatches it. */
export async function viaTool(name, args, call) {
    let result;
    try {
        result = await neo.callTool(name, args);
    } catch (error) {
        if (isZodError(error)) throw zodRefusal(name, error);
        throw error;
    }
    if (result !== null && typeof result === 'object' && !Array.isArray(result) && 'error' in result) {
        throw toolResultError(result, call);
    }
    return result;
}

// The request envelope (ingest's and sync's `envelope`): the push's own top-level fields.
export function envelopeOf(params) {
    return params.envelope && typeof params.envelope === 'object' ? params.envelope : {};
}

/** A fresh, empty backend: its own Chroma collection. */
export async function openBackend(params, handle) {
    await ensureStarted();
    const spoofMode = params?.spoofMode ?? 'overwrite';
    if (spoofMode !== 'overwrite' && spoofMode !== 'reject') throw invalid(`spoofMode must be overwrite or reject, got ${JSON.stringify(spoofMode)}`);
    const revisionMap = params?.revisionMap ?? null;
    if (revisionMap !== null && !Array.isArray(revisionMap)) throw invalid('revisionMap must be null or a list');
    const backend = {
        handle,
        collection: `${collectionPrefix}-${++backendCounter}`,
        spoofMode,
        revisionMap,
        faults    : params?.faults === true,
        switch    : new FaultSwitch()
    };
    // A fresh, empty collection, created the way Neo creates its collection
    // (ChromaManager.getKnowledgeBaseCollection creates it when it is missing).
    await selectBackend(backend);
    const count = await runInternal('open', async () => (await neo.ChromaManager.getKnowledgeBaseCollection()).count());
    if (count !== 0) throw internal(`collection ${backend.collection} is not empty (${count} rows)`);
    return backend;
}

/** Drops the backend's collection. */
export async function closeBackend(backend) {
    if (cachedCollection === backend.collection) {
        neo.ChromaManager.invalidateKnowledgeBaseCollectionCache();
        cachedCollection = null;
    }
    await runInternal('close', async () => {
        try {
            await neo.ChromaManager.client.deleteCollection({name: backend.collection});
        } catch (error) {
            log(`close ${backend.handle}: could not drop ${backend.collection}: ${error.message}`);
        }
    });
}

/** Sets the backend's fault plan; answers how often its switch was consulted since the last. */
export function setFault(backend, plan) {
    if (!backend.faults) throw invalid(`backend ${backend.handle} was opened without faults`);
    return backend.switch.set(plan);
}
