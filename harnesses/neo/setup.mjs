// Neo's setup: its knowledge base loaded from ./node_modules/neo.mjs in process, configured as
// a remote deployment (transport sse) against the private Chroma server, with offline,
// deterministic embeddings and an echo model in place of its model services; what it declares
// (the manifest); and the observation hooks that tell which record became which chunk.

import fs   from 'node:fs';
import path from 'node:path';
import {fileURLToPath, pathToFileURL} from 'node:url';

import {internal} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {chroma, ensureScratch, scratchDir, startChroma} from './chroma.mjs';
import {requestScope} from './calls.mjs';
import {HashingEmbedding} from './embedding.mjs';
import {log} from './log.mjs';

const HERE         = path.dirname(fileURLToPath(import.meta.url));
const NEO_ROOT     = path.join(HERE, 'node_modules', 'neo.mjs');
const HARNESS_NAME = 'kbconform-harness-neo';
const HARNESS_VER  = JSON.parse(fs.readFileSync(path.join(HERE, 'package.json'), 'utf8')).version;
const DIMENSIONS   = 256;

/** Neo's services, once loaded (null before). */
export let neo = null;
const embedding = new HashingEmbedding(DIMENSIONS);

// An echo model in place of Neo's language model: the answer is the prompt SearchService.ask
// assembled (its instructions and the context documents Neo retrieved and hydrated), with the
// question itself left out of the "Question:" line. The question is the caller's own text, not
// something Neo retrieved; echoing it would make every word of it look quoted from the store.
const echoModel = {
    async generateContent(prompt) {
        const question = requestScope.getStore()?.question;
        let text = String(prompt);
        if (typeof question === 'string') {
            const line = `Question: ${question}\n`;
            const at = text.indexOf(line);
            if (at !== -1) text = text.slice(0, at) + 'Question: (the question as asked)\n' + text.slice(at + line.length);
        }
        return {response: {text: () => text}};
    }
};

async function loadNeo() {
    for (const required of ['package.json', 'ai/mcp/server/knowledge-base/config.mjs', 'ai/mcp/server/memory-core/config.mjs']) {
        if (!fs.existsSync(path.join(NEO_ROOT, required))) {
            throw internal(`Neo is not installed (${path.join(NEO_ROOT, required)} is missing): run harnesses/neo/install first.`);
        }
    }
    const version = JSON.parse(fs.readFileSync(path.join(NEO_ROOT, 'package.json'), 'utf8')).version;
    const started = Date.now();

    // Environment Neo reads while its modules load.
    fs.mkdirSync(path.join(scratchDir, 'tmp'), {recursive: true});
    process.env.TMPDIR              = path.join(scratchDir, 'tmp');
    process.env.NEO_CHROMA_HOST     = '127.0.0.1';
    process.env.NEO_CHROMA_PORT     = String(chroma.port);
    process.env.NEO_MEMORY_DB_PATH  = path.join(scratchDir, 'memory-core.sqlite');
    process.env.NEO_BACKUP_PATH     = path.join(scratchDir, 'backups');
    process.env.NEO_KB_ASK_MAX_RPM  = process.env.NEO_KB_ASK_MAX_RPM || '1000000';
    // The remote deployment, the one tenants push to: ingest_source_files is callable only
    // with transport sse (config.mjs:49, ingestSourceFilesTool.mjs:36).
    process.env.NEO_TRANSPORT       = 'sse';
    delete process.env.UNIT_TEST_MODE;

    const load = relative => import(pathToFileURL(path.join(NEO_ROOT, relative)).href);

    await load('src/Neo.mjs');
    await load('src/core/_export.mjs');
    await load('src/manager/Instance.mjs');

    const kbConfig              = (await load('ai/mcp/server/knowledge-base/config.mjs')).default;
    const mcConfig              = (await load('ai/mcp/server/memory-core/config.mjs')).default;
    // A deployment that opts out of Neo's curated framework content (config.mjs
    // useDefaultSources, read when the sources register at import): the knowledge base holds
    // only what tenants push, and manage_knowledge_base's create writes an empty corpus.
    kbConfig.useDefaultSources = false;
    const kbLogger              = (await load('ai/mcp/server/knowledge-base/logger.mjs')).default;
    const ChromaManager         = (await load('ai/services/knowledge-base/ChromaManager.mjs')).default;
    const VectorService         = (await load('ai/services/knowledge-base/VectorService.mjs')).default;
    const IngestionService      = (await load('ai/services/knowledge-base/IngestionService.mjs')).default;
    const QueryService          = (await load('ai/services/knowledge-base/QueryService.mjs')).default;
    const SearchService         = (await load('ai/services/knowledge-base/SearchService.mjs')).default;
    const DocumentService       = (await load('ai/services/knowledge-base/DocumentService.mjs')).default;
    const DatabaseService       = (await load('ai/services/knowledge-base/DatabaseService.mjs')).default;
    const KBRecorderService     = (await load('ai/services/knowledge-base/KBRecorderService.mjs')).default;
    const TextEmbeddingService  = (await load('ai/services/memory-core/TextEmbeddingService.mjs')).default;
    const RequestContextService = (await load('ai/mcp/server/shared/services/RequestContextService.mjs')).default;
    // Neo's diagnostic log files go to the scratch folder, not into the package copy.
    kbConfig.logPath = path.join(scratchDir, 'logs');
    mcConfig.logPath = path.join(scratchDir, 'logs');
    // The framework corpus file that manage_knowledge_base's create writes and embed reads
    // (dist/ai-knowledge-base.jsonl in a checkout) goes to the scratch folder too.
    kbConfig.dataPath = path.join(scratchDir, 'dist', 'ai-knowledge-base.jsonl');
    if (process.env.KBCONFORM_NEO_DEBUG) kbConfig.debug = true;

    for (const service of [ChromaManager, VectorService, IngestionService, QueryService, SearchService, DocumentService, DatabaseService, KBRecorderService]) {
        await service.ready?.();
    }

    // Offline, deterministic embeddings (as Neo's own tests replace the singleton's methods).
    TextEmbeddingService.embedText  = async text => embedding.embed(text);
    TextEmbeddingService.embedTexts = async texts => embedding.embedAll(texts);
    // An echo model: ask's synthesis returns the prompt Neo assembled.
    SearchService.model = echoModel;
    // No 10 s pause between embedding batches.
    kbConfig.batchDelay = 0;

    // Observation only (the return values are Neo's, unchanged): which record became which
    // normalized chunk, which tenant-aware id Neo gave each chunk, what ask retrieved, and the
    // overwrite warnings Neo logs.
    const validateAndNormalize = IngestionService.validateAndNormalizeParsedChunk.bind(IngestionService);
    IngestionService.validateAndNormalizeParsedChunk = async function (options) {
        const normalized = await validateAndNormalize(options);
        const call = requestScope.getStore();
        if (call && normalized && !call.normalized.has(options.fileIndex)) {
            call.normalized.set(options.fileIndex, {chunk: normalized, tenantContext: options.tenantContext});
        }
        return normalized;
    };
    const applyTenantStamp = VectorService.applyTenantStamp.bind(VectorService);
    VectorService.applyTenantStamp = function (chunk, stamp) {
        const stamped = applyTenantStamp(chunk, stamp);
        const call = requestScope.getStore();
        if (call) {
            call.assigned.set(chunkKey(stamp.repoSlug, chunk), stamped.id);
        }
        return stamped;
    };
    // Inside a kit call, Neo's query is asked with includeMetadata, which changes nothing but
    // adds each source's top chunk to its result (QueryService.mjs:239): the whole result is kept
    // for the harness (a hit's id and metadata), and the caller gets what the flag it passed
    // gives. So a query is one run of Neo's ranking, not two.
    const queryDocuments = QueryService.queryDocuments.bind(QueryService);
    QueryService.queryDocuments = async function (options) {
        const call = requestScope.getStore();
        if (!call || options === null || typeof options !== 'object') return queryDocuments(options);
        const result = await queryDocuments({...options, includeMetadata: true});
        call.lastQuery = result;
        if (options.includeMetadata || !Array.isArray(result?.results)) return result;
        return {...result, results: result.results.map(({metadata, ...shown}) => shown)};
    };
    const warn = kbLogger.warn.bind(kbLogger);
    kbLogger.warn = function (...args) {
        const call = requestScope.getStore();
        if (call && args[0] === '[VectorService] Overwriting client-supplied tenant metadata field.' && args[1]) {
            call.spoofWarnings.push({field: args[1].field, chunkId: args[1].chunkId});
        }
        return warn(...args);
    };

    // The KB server's tool dispatch (Server.mjs getToolService): transport check, KBRecorderService
    // telemetry (SQLite at NEO_MEMORY_DB_PATH), then ToolService.callTool. Loaded after the
    // observation above, since its table binds each service method as it loads (query_documents
    // is QueryService.queryDocuments as it is then).
    const {callTool}            = await load('ai/mcp/server/knowledge-base/toolService.mjs');
    if (kbConfig.transport !== 'sse') {
        throw internal(`Neo's KB config reads transport '${kbConfig.transport}', not 'sse' (NEO_TRANSPORT)`);
    }

    neo = {
        version, kbConfig, mcConfig, ChromaManager, VectorService, IngestionService, QueryService,
        SearchService, DocumentService, DatabaseService, RequestContextService, callTool, collectionPrototype: null
    };
    log(`neo.mjs ${version} loaded from ${NEO_ROOT}; transport ${kbConfig.transport}; Chroma ${kbConfig.host}:${kbConfig.port}; ` +
        `shared tenant '${kbConfig.defaultTenantId}', default repo '${kbConfig.defaultRepoSlug}', ` +
        `embedding provider '${mcConfig.embeddingProvider}' replaced by ${embedding.name} (${Date.now() - started} ms)`);
}

export function chunkKey(repoSlug, chunk) {
    return JSON.stringify([repoSlug, chunk.hash, chunk.type, chunk.name, chunk.source]);
}

// --- what Neo declares -------------------------------------------------------------------------------------
export function manifest() {
    return {
        manifestVersion: '1',
        adapter        : {name: HARNESS_NAME, version: HARNESS_VER},
        backend        : {name: 'neo.mjs knowledge base (MCP tools through toolService.mjs callTool, transport sse; DatabaseService for export and restore)', version: neo.version},
        readFacades    : ['query', 'get', 'list', 'ask'],
        isolationModel : 'metadata-filter',
        spoofModes     : ['overwrite', 'reject'],
        sharedNamespace: neo.kbConfig.defaultTenantId,
        // Neo's design: the team namespace is read by every tenant (QueryService.mjs:413,
        // DocumentService.mjs:57, :97: tenantId $in [requester, defaultTenantId]).
        sharedNamespaceReaders: 'every-tenant',
        // The remote deployment's work-volume gate: ingest_source_files refuses a push of more
        // than mcpSyncMaxChunks chunks (ingestSourceFilesTool.mjs:78; one record is one chunk).
        maxWriteBatch  : neo.kbConfig.mcpSyncMaxChunks,
        // Neo's documented single-tenant mode: with no request context "services fall back to
        // single-tenant mode: no tag on writes, no filter on reads" (RequestContextService.mjs:164-167).
        // The identity is the server's (OIDC), not the application's: the kit does not honour it.
        noIdentity     : 'single-tenant',
        // Neo's knowledge-base server answers its clients' requests as they come (one Node event
        // loop; each request's identity in RequestContextService's AsyncLocalStorage).
        concurrency    : 'threads',
        // Export and import have no MCP tool: DatabaseService, from an operator's command line.
        operatorPaths  : 'command-line',
        // Neo checks records against its own parsed-chunk-v1 (parser/parsed-chunk-v1.schema.json),
        // looser than the kit's in ways that are not about isolation (N12).
        recordSchema   : 'looser',
        idProfile      : 'neo-compat',
        config         : {
            transport          : 'stdio',
            neoTransport       : neo.kbConfig.transport,
            toolDispatch       : 'ai/mcp/server/knowledge-base/toolService.mjs callTool (in process: no SSE server, no health gate)',
            mcpSyncMaxChunks   : neo.kbConfig.mcpSyncMaxChunks,
            // Nothing that differs from one start to the next (the kit restarts a broken harness
            // and expects the same manifest): the port and the pid are in the harness log.
            chroma             : {host: '127.0.0.1', version: chroma.version, binary: chroma.binary},
            collectionPerBackend: 'kbconform-neo-<pid>-<n>',
            embedding          : `${embedding.name} (kbconform HashingEmbedding, in place of TextEmbeddingService.embedText/embedTexts)`,
            embeddingProvider  : neo.mcConfig.embeddingProvider,
            askModel           : 'echo (SearchService.model returns the prompt)',
            askMaxCallsPerMinute: neo.kbConfig.askSynthesis?.maxCallsPerMinute,
            batchDelay         : 0,
            ingest             : 'ingest_source_files({...envelope, files})',
            applyDeletionSignal: 'ingest_source_files({...signal, files: []})',
            sync               : 'ingest_source_files({...envelope, files, manifestSnapshot: {repoSlug, pathsAfterPush}})',
            query              : "query_documents({query, type: 'all', limit}); the QueryService.queryDocuments it runs asked with includeMetadata, its sources' metadata kept",
            get                : 'get_document_by_id({id})',
            list               : 'list_documents({limit, offset})',
            ask                : "ask_knowledge_base({query, type: 'all', limit})",
            maintain           : 'manage_knowledge_base({action})',
            exportRestore      : 'DatabaseService.exportDatabase / importDatabase (no tool)',
            dataPath           : 'dist/ai-knowledge-base.jsonl in the scratch folder',
            useDefaultSources  : false,
            queryType          : 'all',
            defaultTenantId    : neo.kbConfig.defaultTenantId,
            defaultRepoSlug    : neo.kbConfig.defaultRepoSlug,
            defaultVisibility  : neo.kbConfig.defaultVisibility,
            neoRoot            : NEO_ROOT
        },
        features: {
            'client-where'     : "Neo's QueryService.queryDocuments takes a query, a content type and a limit; it has no client where clause.",
            'revision-boundary': true,
            'fault-injection'  : true,
            'escalation'       : 'Neo has no escalation: kbConfig.spoofRejectionMode is fixed per deployment (overwrite or reject) and VectorService.validateTenantStamp keeps no per-principal count.',
            'workspace-scan'   : "Neo parses workspaces with its own Source and parser classes (ai/services/knowledge-base/source, parser), not with kbconform's registry.",
            // A push's top-level tenantId, repoSlug and visibility (ingest_source_files's schema
            // drops originAgentIdentity).
            'envelope'         : true,
            // A push with a manifest snapshot replaces a repository's corpus (IngestionService.mjs).
            'sync'             : true,
            // manage_knowledge_base's non-destructive actions (openapi.yaml /db/data/manage);
            // its fourth, delete, drops the collection by design and is no maintenance.
            'maintenance'      : ['sync', 'embed']
        }
    };
}

/** Chroma started and Neo loaded, once. */
export async function ensureStarted() {
    if (neo) return;
    ensureScratch();
    if (!chroma) await startChroma();
    await loadNeo();
}
