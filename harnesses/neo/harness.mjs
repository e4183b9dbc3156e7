// kbconform harness-v1 (stdio) for Neo's real knowledge base: the npm package neo.mjs 13.1.0,
// installed by ./install into ./node_modules.
//
// It drives Neo's knowledge base through its MCP tool layer, in process: `callTool` of
// ai/mcp/server/knowledge-base/toolService.mjs (the transport check, the tool's zod schema from
// openapi.yaml, then Neo's service), with the transport `sse` of a remote deployment; export
// and restore, which have no tool, call DatabaseService. Neo runs against a private `chroma run`
// server, one Chroma collection per backend. The harness translates each kit call and each
// answer, and adds no check, filter or identity rule of its own: whatever Neo answers is what
// the kit sees. README.md documents every mapping.
//
// stdout carries protocol responses only: everything else (console, Neo's logs, Chroma's output)
// goes to stderr, the harness log.

import {AsyncLocalStorage} from 'node:async_hooks';
import {spawn}             from 'node:child_process';
import fs                  from 'node:fs';
import net                 from 'node:net';
import os                  from 'node:os';
import path                from 'node:path';
import readline            from 'node:readline';
import {fileURLToPath, pathToFileURL} from 'node:url';

import {HashingEmbedding} from './embedding.mjs';

// --- stdout belongs to the protocol ------------------------------------------------------------
const protocolOut = process.stdout.write.bind(process.stdout);
process.stdout.write = (chunk, encoding, callback) => process.stderr.write(chunk, encoding, callback);
for (const method of ['log', 'info', 'warn', 'debug', 'trace', 'dir', 'table']) {
    console[method] = (...args) => console.error(...args);
}

const HERE          = path.dirname(fileURLToPath(import.meta.url));
const NEO_ROOT      = path.join(HERE, 'node_modules', 'neo.mjs');
const HARNESS_NAME  = 'kbconform-harness-neo';
const HARNESS_VER   = JSON.parse(fs.readFileSync(path.join(HERE, 'package.json'), 'utf8')).version;
const PROTOCOL      = 'harness-v1';
const DIMENSIONS    = 256;
const CHROMA_START_DEADLINE_MS = Number(process.env.KBCONFORM_NEO_CHROMA_DEADLINE_MS || 60000);

const log = (...parts) => process.stderr.write(`[neo-harness] ${parts.join(' ')}\n`);

// --- errors --------------------------------------------------------------------------------------
class HarnessError extends Error {
    constructor(code, message) {
        super(message);
        this.code = code;
    }
}
const internal = message => new HarnessError('KB_HARNESS_INTERNAL', message);
const invalid  = message => new HarnessError('KB_HARNESS_REQUEST_INVALID', message);

// Neo's error codes (thrown, or reported in an ingestion summary) and the kbconform code each means.
const NEO_CODE_MAP = {
    KB_TENANT_SPOOF_REJECTED          : 'KB_TENANT_SPOOF_REJECTED',
    KB_INGEST_TENANT_MISMATCH         : 'KB_TENANT_SPOOF_REJECTED',
    KB_REVISION_BOUNDARY_UNAVAILABLE  : 'KB_REVISION_BOUNDARY_UNAVAILABLE',
    KB_REVISION_BOUNDARY_INVALID      : 'KB_REVISION_BOUNDARY_INVALID',
    KB_TOMBSTONE_INVALID              : 'KB_TOMBSTONE_INVALID',
    KB_MANIFEST_INVALID               : 'KB_MANIFEST_INVALID',
    KB_DELETE_SIGNAL_INVALID          : 'KB_DELETE_SIGNAL_INVALID',
    KB_PARSED_CHUNK_INVALID           : 'KB_CONTRACT_VIOLATION',
    KB_PARSED_CHUNK_EMBEDDING_REJECTED: 'KB_CONTRACT_VIOLATION',
    KB_FILE_PAYLOAD_INVALID           : 'KB_CONTRACT_VIOLATION',
    KB_INGEST_FILES_INVALID           : 'KB_CONTRACT_VIOLATION',
    KB_PARSER_NOT_REGISTERED          : 'KB_CONTRACT_VIOLATION',
    KB_FILE_PARSE_FAILED              : 'KB_CONTRACT_VIOLATION',
    KB_INGEST_INPUT_SIZE_EXCEEDED     : 'KB_CONTRACT_VIOLATION',
    KB_TENANT_MANIFEST_INVALID        : 'KB_CONTRACT_VIOLATION',
    // The MCP work-volume gates (ingestSourceFilesTool.mjs:78, VectorService.mjs:1087): a
    // request over mcpSyncMaxChunks that the tool refuses before doing anything.
    KB_INGEST_VOLUME_EXCEEDED         : 'KB_CONTRACT_VIOLATION',
    KB_SYNC_VOLUME_EXCEEDED           : 'KB_CONTRACT_VIOLATION',
    KB_COLLECTION_SWAP_IN_PROGRESS    : 'KB_BACKEND_UNAVAILABLE',
    KB_TENANT_MANIFEST_WRITE_FAILED   : 'KB_BACKEND_UNAVAILABLE'
};
// Codes Neo uses for "something failed underneath": what they mean depends on what the store did.
const NEO_STORE_CODES = new Set([
    'KB_VECTOR_EMBED_FAILED', 'KB_INGEST_FAILED', 'DATABASE_EXPORT_ERROR', 'DATABASE_IMPORT_ERROR'
]);
// Chroma client errors that say the store refused the request as invalid (4xx, client-side checks).
const CHROMA_REFUSALS = new Set([
    'ChromaClientError', 'ChromaValueError', 'InvalidArgumentError', 'InvalidCollectionError', 'ChromaUniqueError'
]);
// Chroma client errors that say the store could not answer.
const CHROMA_FAILURES = new Set(['ChromaConnectionError', 'ChromaServerError']);

/** The kbconform code of a Neo code, given what the store did during this request. */
function codeFor(neoCode, call) {
    if (neoCode && NEO_CODE_MAP[neoCode]) return NEO_CODE_MAP[neoCode];
    if (!neoCode || NEO_STORE_CODES.has(neoCode)) {
        if (call.storeFailures > 0) return 'KB_BACKEND_UNAVAILABLE';
        if (call.storeRefusals > 0) return 'KB_CONTRACT_VIOLATION';
    }
    return 'KB_HARNESS_INTERNAL';
}

/** Maps an error Neo threw onto a kbconform code, keeping Neo's message. */
function translateThrown(error, call, operation) {
    if (error instanceof HarnessError) return error;
    const message = String(error?.message ?? error);
    if (operation === 'get' && /^Document with id '.*' not found\.$/s.test(message)) {
        return new HarnessError('KB_NOT_FOUND', message);
    }
    if (operation === 'query' && message === 'A query string must be provided.') {
        return new HarnessError('KB_CONTRACT_VIOLATION', message);
    }
    const code = codeFor(error?.code, call);
    if (code === 'KB_HARNESS_INTERNAL') {
        log(`${operation}: unexpected error from Neo:`, error?.stack || message);
    }
    return new HarnessError(code, message);
}

// A ZodError is ToolService.callTool refusing a tool's arguments (ToolService.mjs:97): the
// deployment answers the call as invalid before any service runs.
const isZodError = error => error?.name === 'ZodError' && Array.isArray(error.issues);

function zodRefusal(tool, error) {
    const shown = error.issues.slice(0, 3).map(issue =>
        `${(issue.path || []).join('.') || '(arguments)'}: ${String(issue.message).slice(0, 120)}`);
    const more = error.issues.length > shown.length ? `; ${error.issues.length - shown.length} more` : '';
    return new HarnessError('KB_CONTRACT_VIOLATION', `${tool} refused its arguments: ${shown.join('; ')}${more}`);
}

// A tool result with an `error` key is a failed call (BaseServer.formatToolResult answers it
// with isError: true); its `code` is mapped like any other Neo code.
function toolResultError(result, call) {
    const text = String(result.message ?? result.error);
    return new HarnessError(codeFor(result.code, call), result.code ? `${result.code}: ${text}` : text);
}

/** Calls an MCP tool through Neo's toolService.mjs `callTool`, as the KB server dispatches it. */
async function viaTool(name, args, call) {
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

// --- per-request bookkeeping ---------------------------------------------------------------------
// One kit request at a time; `requestScope` follows its async work into Neo and the Chroma client.
const requestScope = new AsyncLocalStorage();

function newCall(operation, backend, {internal: isInternal = false} = {}) {
    return {
        operation,
        backend,
        internal     : isInternal,
        storeFailures: 0,
        storeRefusals: 0,
        upserted     : new Set(),
        deleted      : [],
        resolverCalls: [],
        assigned     : new Map(),   // Neo's tenant-aware id per (repoSlug, hash, type, name, source)
        normalized   : new Map(),   // record index -> Neo's normalized chunk
        spoofWarnings: [],
        lastQuery    : null,
        question     : null,
        fetches      : 0
    };
}

const consultSwitch = call => {
    const backend = call?.backend;
    if (!call || call.internal || !backend || !backend.faults) return false;
    const seen = backend.consulted++;
    const plan = backend.plan;
    return Boolean(plan) && seen >= plan.pass && (plan.fail === null || seen < plan.pass + plan.fail);
};

// Every HTTP request the Chroma client sends is one store call: the fault switch is consulted
// before it, and what the store answered is noted for error translation.
const realFetch = globalThis.fetch;
globalThis.fetch = async function harnessFetch(input, init) {
    const call = requestScope.getStore();
    if (call) call.fetches++;
    if (consultSwitch(call)) {
        call.storeFailures++;
        throw new TypeError('fetch failed', {cause: new Error('store call failed by the kbconform fault plan')});
    }
    let response;
    try {
        response = await realFetch(input, init);
    } catch (error) {
        if (call) call.storeFailures++;
        throw error;
    }
    if (call && !response.ok) {
        if (response.status >= 500) call.storeFailures++;
        else if (response.status !== 404) call.storeRefusals++;
    }
    return response;
};

// --- Chroma server ---------------------------------------------------------------------------------
let scratchDir = null;
let chroma     = null;   // {proc, port, watchdog, version}

function findChroma() {
    const configured = process.env.KBCONFORM_CHROMA;
    if (configured) {
        try {
            fs.accessSync(configured, fs.constants.X_OK);
            return configured;
        } catch {
            throw internal(`KBCONFORM_CHROMA is set to '${configured}', which is not an executable file.`);
        }
    }
    for (const dir of (process.env.PATH || '').split(path.delimiter)) {
        if (!dir) continue;
        const candidate = path.join(dir, 'chroma');
        try {
            fs.accessSync(candidate, fs.constants.X_OK);
            if (fs.statSync(candidate).isFile()) return candidate;
        } catch {
            // not here
        }
    }
    throw internal('No Chroma server binary: set KBCONFORM_CHROMA to a `chroma` executable (pip install chromadb) or put `chroma` on PATH.');
}

function freePort() {
    return new Promise((resolve, reject) => {
        const server = net.createServer();
        server.unref();
        server.on('error', reject);
        server.listen(0, '127.0.0.1', () => {
            const {port} = server.address();
            server.close(() => resolve(port));
        });
    });
}

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

async function heartbeat(port) {
    try {
        const response = await realFetch(`http://127.0.0.1:${port}/api/v2/heartbeat`, {signal: AbortSignal.timeout(2000)});
        return response.ok;
    } catch {
        return false;
    }
}

async function chromaVersion(binary) {
    return new Promise(resolve => {
        const proc = spawn(binary, ['--version'], {stdio: ['ignore', 'pipe', 'ignore']});
        let out = '';
        const timer = setTimeout(() => proc.kill('SIGKILL'), 10000);
        proc.stdout.on('data', data => { out += data; });
        proc.on('error', () => { clearTimeout(timer); resolve('unknown'); });
        proc.on('close', () => { clearTimeout(timer); resolve(out.trim().replace(/^chroma\s+/i, '') || 'unknown'); });
    });
}

async function startChroma() {
    const binary  = findChroma();
    const dataDir = path.join(scratchDir, 'chroma-data');
    fs.mkdirSync(dataDir, {recursive: true});

    let lastOutput = '';
    for (let attempt = 1; attempt <= 3; attempt++) {
        const port = await freePort();
        const proc = spawn(binary, ['run', '--path', dataDir, '--host', '127.0.0.1', '--port', String(port)], {
            cwd  : scratchDir,
            stdio: ['ignore', 'pipe', 'pipe'],
            env  : {...process.env, RUST_LOG: process.env.KBCONFORM_NEO_CHROMA_LOG || 'warn'}
        });
        let exited = null;
        let output = '';
        const forward = data => {
            const text = data.toString();
            output = (output + text).slice(-4000);
            process.stderr.write(text.replace(/\x1b\[[0-9;]*m/g, '').replace(/^(?=.)/gm, '[chroma] '));
        };
        proc.stdout.on('data', forward);
        proc.stderr.on('data', forward);
        proc.on('error', error => { exited = `could not start: ${error.message}`; });
        proc.on('exit', (code, signal) => { exited = exited || `exited (code ${code}, signal ${signal})`; });

        const deadline = Date.now() + CHROMA_START_DEADLINE_MS;
        while (!exited && Date.now() < deadline) {
            if (await heartbeat(port)) {
                const watchdog = startWatchdog(proc.pid);
                chroma = {proc, port, watchdog, binary, version: await chromaVersion(binary)};
                log(`chroma ${chroma.version} (${binary}) listening on 127.0.0.1:${port}, pid ${proc.pid}, data ${dataDir}`);
                return;
            }
            await sleep(150);
        }
        lastOutput = output;
        if (!exited) {
            proc.kill('SIGKILL');
            throw internal(`Chroma (${binary}) did not answer its heartbeat on 127.0.0.1:${port} within ${CHROMA_START_DEADLINE_MS} ms. Its output: ${output.slice(-800)}`);
        }
        log(`chroma on port ${port} ${exited}; attempt ${attempt} of 3`);
    }
    throw internal(`Chroma (${binary}) would not start. Its last output: ${lastOutput.slice(-800)}`);
}

// A watchdog outside the harness's process group stops Chroma and removes the scratch folder
// if the harness dies without cleaning up (killed with SIGKILL, for instance).
function startWatchdog(chromaPid) {
    const script = 'while kill -0 "$1" 2>/dev/null; do sleep 1; done; ' +
                   'kill -TERM "$2" 2>/dev/null; sleep 3; kill -KILL "$2" 2>/dev/null; rm -rf -- "$3"; exit 0';
    const watchdog = spawn('/bin/sh', ['-c', script, 'kbconform-neo-watchdog', String(process.pid), String(chromaPid), scratchDir],
        {detached: true, stdio: 'ignore'});
    watchdog.unref();
    return watchdog;
}

async function stopChroma() {
    if (!chroma) return;
    const {proc, watchdog} = chroma;
    chroma = null;
    try {
        if (watchdog.exitCode === null) process.kill(watchdog.pid, 'SIGKILL');
    } catch {
        // already gone
    }
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise(resolve => proc.once('exit', resolve));
    proc.kill('SIGTERM');
    const done = await Promise.race([exited.then(() => true), sleep(5000).then(() => false)]);
    if (!done) {
        proc.kill('SIGKILL');
        await Promise.race([exited, sleep(2000)]);
    }
    log(`chroma (pid ${proc.pid}) stopped`);
}

function stopChromaSync() {
    if (!chroma) return;
    try { process.kill(chroma.watchdog.pid, 'SIGKILL'); } catch { /* gone */ }
    try { chroma.proc.kill('SIGKILL'); } catch { /* gone */ }
    chroma = null;
}

function removeScratch() {
    if (scratchDir) {
        try {
            fs.rmSync(scratchDir, {recursive: true, force: true});
        } catch (error) {
            log(`could not remove ${scratchDir}: ${error.message}`);
        }
        scratchDir = null;
    }
}

// --- Neo -------------------------------------------------------------------------------------------
let neo = null;
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
    // The KB server's tool dispatch (Server.mjs getToolService): transport check, KBRecorderService
    // telemetry (SQLite at NEO_MEMORY_DB_PATH), then ToolService.callTool.
    const {callTool}            = await load('ai/mcp/server/knowledge-base/toolService.mjs');
    if (kbConfig.transport !== 'sse') {
        throw internal(`Neo's KB config reads transport '${kbConfig.transport}', not 'sse' (NEO_TRANSPORT)`);
    }

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
    const queryDocuments = QueryService.queryDocuments.bind(QueryService);
    QueryService.queryDocuments = async function (options) {
        const result = await queryDocuments(options);
        const call = requestScope.getStore();
        if (call) call.lastQuery = result;
        return result;
    };
    const warn = kbLogger.warn.bind(kbLogger);
    kbLogger.warn = function (...args) {
        const call = requestScope.getStore();
        if (call && args[0] === '[VectorService] Overwriting client-supplied tenant metadata field.' && args[1]) {
            call.spoofWarnings.push({field: args[1].field, chunkId: args[1].chunkId});
        }
        return warn(...args);
    };

    neo = {
        version, kbConfig, mcConfig, ChromaManager, VectorService, IngestionService, QueryService,
        SearchService, DocumentService, DatabaseService, RequestContextService, callTool, collectionPrototype: null
    };
    log(`neo.mjs ${version} loaded from ${NEO_ROOT}; transport ${kbConfig.transport}; Chroma ${kbConfig.host}:${kbConfig.port}; ` +
        `shared tenant '${kbConfig.defaultTenantId}', default repo '${kbConfig.defaultRepoSlug}', ` +
        `embedding provider '${mcConfig.embeddingProvider}' replaced by ${embedding.name}`);
}

function chunkKey(repoSlug, chunk) {
    return JSON.stringify([repoSlug, chunk.hash, chunk.type, chunk.name, chunk.source]);
}

// Store-call accounting on the Chroma collection object: ids of writes and deletes that
// succeeded, and the class of every error a collection method threw.
function instrumentCollection(collection) {
    const proto = Object.getPrototypeOf(collection);
    if (!proto || proto.__kbconformInstrumented) return;
    for (const name of ['add', 'upsert', 'update', 'delete', 'get', 'query', 'count', 'peek', 'modify', 'search']) {
        const original = proto[name];
        if (typeof original !== 'function') continue;
        proto[name] = async function (...args) {
            const call = requestScope.getStore();
            const fetchesBefore = call?.fetches ?? 0;
            try {
                const result = await original.apply(this, args);
                if (call && !call.internal && Array.isArray(args[0]?.ids)) {
                    if (name === 'delete') call.deleted.push(...args[0].ids);
                    else if (name === 'upsert' || name === 'add' || name === 'update') args[0].ids.forEach(id => call.upserted.add(id));
                }
                return result;
            } catch (error) {
                if (call) {
                    const kind = error?.name || error?.constructor?.name;
                    if (CHROMA_FAILURES.has(kind)) call.storeFailures++;
                    // A Chroma error class that means "invalid request", or any error the client
                    // threw while processing the arguments, before sending anything to the store.
                    else if (CHROMA_REFUSALS.has(kind) || call.fetches === fetchesBefore) call.storeRefusals++;
                }
                throw error;
            }
        };
    }
    Object.defineProperty(proto, '__kbconformInstrumented', {value: true});
}

// --- backends --------------------------------------------------------------------------------------
const backends = new Map();
let backendCounter = 0;
let cachedCollection = null;   // the collection name Neo's ChromaManager has cached

async function runInternal(operation, fn) {
    return requestScope.run(newCall(operation, null, {internal: true}), fn);
}

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

function backendOf(params) {
    const backend = backends.get(params?.backend);
    if (!backend) throw invalid(`unknown backend ${JSON.stringify(params?.backend)}`);
    return backend;
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
async function onBackend(operation, backend, principal, fn) {
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
function hitOf(id, content, metadata) {
    const meta = metadata && typeof metadata === 'object' ? metadata : {};
    const document = typeof content === 'string' ? content
        : typeof meta.content === 'string' ? meta.content
        : null;
    return {id: String(id), document, metadata: meta};
}

// A ranked source from queryDocuments: Neo names the source file and gives the top chunk's
// metadata. Hits Neo adds from its own install directory (lexical rescue) carry no chunk id:
// their id is the source path Neo reports.
function hitOfRanked(result) {
    const metadata = result?.metadata || {};
    const id = typeof metadata.id === 'string' && metadata.id ? metadata.id : result?.source;
    return hitOf(id, undefined, metadata);
}

// --- manifest -------------------------------------------------------------------------------------
function manifest() {
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
            query              : "query_documents({query, type: 'all', limit}), its sources' metadata from QueryService.queryDocuments({..., includeMetadata: true})",
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

const collectionPrefix = `kbconform-neo-${process.pid}`;

// --- operations -------------------------------------------------------------------------------------
async function ensureStarted() {
    if (neo) return;
    if (!scratchDir) scratchDir = fs.mkdtempSync(path.join(os.tmpdir(), 'kbconform-neo-'));
    if (!chroma) await startChroma();
    await loadNeo();
}

const operations = {
    async hello(params) {
        if (params?.protocol !== PROTOCOL) throw invalid(`unsupported protocol ${JSON.stringify(params?.protocol)}; this harness speaks ${PROTOCOL}`);
        try {
            await ensureStarted();
        } catch (error) {
            throw error instanceof HarnessError ? error : internal(`could not start Neo's knowledge base: ${error?.stack || error}`);
        }
        return {protocol: PROTOCOL, manifest: manifest()};
    },

    async open(params) {
        await ensureStarted();
        const spoofMode = params?.spoofMode ?? 'overwrite';
        if (spoofMode !== 'overwrite' && spoofMode !== 'reject') throw invalid(`spoofMode must be overwrite or reject, got ${JSON.stringify(spoofMode)}`);
        const revisionMap = params?.revisionMap ?? null;
        if (revisionMap !== null && !Array.isArray(revisionMap)) throw invalid('revisionMap must be null or a list');
        const handle  = `b${++backendCounter}`;
        const backend = {
            handle,
            collection: `${collectionPrefix}-${backendCounter}`,
            spoofMode,
            revisionMap,
            faults    : params?.faults === true,
            plan      : null,
            consulted : 0
        };
        // A fresh, empty collection, created the way Neo creates its collection
        // (ChromaManager.getKnowledgeBaseCollection creates it when it is missing).
        await selectBackend(backend);
        const count = await runInternal('open', async () => (await neo.ChromaManager.getKnowledgeBaseCollection()).count());
        if (count !== 0) throw internal(`collection ${backend.collection} is not empty (${count} rows)`);
        backends.set(handle, backend);
        return {backend: handle};
    },

    async close(params) {
        const backend = backendOf(params);
        backends.delete(backend.handle);
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
        return {};
    },

    async fault(params) {
        const backend = backendOf(params);
        if (!backend.faults) throw invalid(`backend ${backend.handle} was opened without faults`);
        const plan = params.plan;
        if (plan !== null && (typeof plan !== 'object' || !Number.isInteger(plan.pass) || plan.pass < 0 ||
            !(plan.fail === null || plan.fail === undefined || (Number.isInteger(plan.fail) && plan.fail >= 0)))) {
            throw invalid('plan must be null or {pass: integer >= 0, fail: integer >= 0 or null}');
        }
        const consulted = backend.consulted;
        backend.consulted = 0;
        backend.plan = plan === null ? null : {pass: plan.pass, fail: plan.fail ?? null};
        return {consulted};
    },

    async ingest(params) {
        const backend = backendOf(params);
        const records = params.records;
        return onBackend('ingest', backend, params.principal, async call => {
            // The tool ingest_source_files, as a remote tenant pushes: each parsed-chunk-v1 record
            // is one entry of `files` (IngestionService.resolveFileChunks takes a record with
            // schemaVersion 1.0.0 as is); the envelope's fields are the push's top-level fields.
            // The tool's schema keeps tenantId, repoSlug and visibility and drops
            // originAgentIdentity; more than 50 records meet its work-volume gate.
            const summary = await viaTool('ingest_source_files', {...envelopeOf(params), files: records}, call);
            return translateIngest(summary, records, call);
        });
    },

    async query(params) {
        const backend = backendOf(params);
        if (params.where !== null && params.where !== undefined) {
            // Feature client-where is declared absent, so the kit sends none; were one sent, the
            // tool's schema would drop it (query_documents has no where parameter).
            log(`query: a where clause was sent; query_documents has no where parameter and drops it`);
        }
        return onBackend('query', backend, params.principal, async call => {
            // What the tenant sees: query_documents, whose schema drops includeMetadata, so its
            // results are {source, score}. The kit's nResults is the tool's limit.
            const args   = {query: params.text, type: 'all', limit: params.nResults};
            const shown  = (await viaTool('query_documents', args, call))?.results || [];
            // The detail: the same query on QueryService with includeMetadata (each source's top
            // chunk, for the hit's id and metadata), run as the harness's own call (no fault
            // switch, no store accounting) under the same request context.
            const detail = (await requestScope.run(newCall('query-metadata', backend, {internal: true}),
                () => neo.QueryService.queryDocuments({...args, includeMetadata: true})))?.results || [];
            const toolSources    = shown.map(result => result.source);
            const serviceSources = detail.map(result => result.source);
            const missing = toolSources.filter(source => !serviceSources.includes(source));
            const extra   = serviceSources.filter(source => !toolSources.includes(source));
            if (missing.length > 0 || extra.length > 0 || toolSources.length !== serviceSources.length) {
                throw internal(`query: query_documents and QueryService.queryDocuments({includeMetadata: true}) disagree on the sources: ` +
                    `tool ${JSON.stringify(toolSources).slice(0, 400)}, service ${JSON.stringify(serviceSources).slice(0, 400)}`);
            }
            if (toolSources.some((source, index) => source !== serviceSources[index])) {
                log(`query: the service ranked the same sources in another order; the hits follow the tool's`);
            }
            const bySource = new Map(detail.map(result => [result.source, result]));
            return {hits: shown.map(result => hitOfRanked(bySource.get(result.source)))};
        });
    },

    async get(params) {
        const backend = backendOf(params);
        return onBackend('get', backend, params.principal, async call => {
            const document = await viaTool('get_document_by_id', {id: params.id}, call);
            return {hit: hitOf(document.id, document.content, document.metadata)};
        });
    },

    async list(params) {
        const backend = backendOf(params);
        return onBackend('list', backend, params.principal, async call => {
            const result = await viaTool('list_documents', {limit: params.limit, offset: params.offset}, call);
            return {hits: (result?.documents || []).map(document => hitOf(document.id, document.content, document.metadata))};
        });
    },

    async ask(params) {
        const backend = backendOf(params);
        return onBackend('ask', backend, params.principal, async call => {
            call.question = params.question;
            const answer = await viaTool('ask_knowledge_base', {query: params.question, type: 'all', limit: params.nResults}, call);
            // Neo's references name source files only; the metadata of each is the one ask's own
            // queryDocuments call returned for that source (the context ask synthesized from).
            const ranked = new Map((call.lastQuery?.results || []).map(result => [result.source, result]));
            const sources = (answer?.references || []).map(reference =>
                ranked.has(reference.source) ? hitOfRanked(ranked.get(reference.source))
                    : hitOf(reference.source, undefined, {source: reference.source, name: reference.name}));
            if (answer?.degraded) log(`ask: Neo degraded its answer (${answer.degradedCode}): ${answer.reason}`);
            return {text: String(answer?.answer ?? ''), sources};
        });
    },

    async applyDeletionSignal(params) {
        const backend = backendOf(params);
        const signal  = params.signal;
        return onBackend('applyDeletionSignal', backend, params.principal, async call => {
            // The signal's fields are the deletion fields of an ingest_source_files push (deleted,
            // manifestSnapshot, baseRevision, headRevision, repoSlug), passed as they are, valid
            // or not; the tool's schema and Neo check them. Only `files` differs: the kit's lists
            // paths, Neo's are payloads with content to ingest, so Neo gets `files: []`.
            const isObject = signal !== null && typeof signal === 'object' && !Array.isArray(signal);
            if (!isObject) log(`applyDeletionSignal: the signal is not an object (${JSON.stringify(signal)?.slice(0, 80)}); Neo gets a push without deletion fields`);
            const payload = {...(isObject ? signal : {}), files: []};
            if (isObject && Object.hasOwn(signal, 'files')) {
                log(`applyDeletionSignal: the signal's files (${JSON.stringify(signal.files)?.slice(0, 200)}) have no counterpart in Neo's push and are not sent`);
            }
            const summary = await viaTool('ingest_source_files', payload, call);
            const deletedIds = [...new Set(call.deleted)];
            if (summary.errors?.length > 0) {
                // As for ingest: a summary with an error is Neo's report that the push failed;
                // whatever Neo deleted before it is logged, and the kit sees it on its next reads.
                logSummaryErrors('applyDeletionSignal', summary);
                if (deletedIds.length > 0) {
                    log(`applyDeletionSignal: Neo deleted ${deletedIds.length} chunk(s) (${deletedIds.join(', ')}) and reported ` +
                        `${summary.errors.length} error(s); the call answers with Neo's error`);
                }
                throw summaryError(summary, call);
            }
            return {deletedIds, resolverCalls: call.resolverCalls};
        });
    },

    async sync(params) {
        const backend = backendOf(params);
        const records = params.records;
        return onBackend('sync', backend, params.principal, async call => {
            // Neo's way to replace a repository's corpus: one ingest_source_files push writing the
            // records with a manifest snapshot listing their paths, so every other path of the
            // repository is deleted (IngestionService.applyDeletionSignals). Records and repoSlug
            // go as sent; the envelope's fields are the push's top-level fields, as for ingest.
            const paths = Array.isArray(records)
                ? records.map(record => (record && typeof record === 'object' ? record.sourcePath : undefined))
                : [];
            const manifestSnapshot = {repoSlug: params.repoSlug, pathsAfterPush: paths};
            const summary = await viaTool('ingest_source_files', {...envelopeOf(params), files: records, manifestSnapshot}, call);
            const result = translateIngest(summary, records, call);
            return {...result, deletedIds: [...new Set(call.deleted)]};
        });
    },

    async maintain(params) {
        const backend = backendOf(params);
        return onBackend('maintain', backend, params.principal, async call => {
            // The tool manage_knowledge_base (toolService.mjs:76 adds viaMcp: true); a result
            // with `error` (KB_SYNC_VOLUME_EXCEEDED) is a failed call.
            await viaTool('manage_knowledge_base', {action: params.operation}, call);
            return {};
        });
    },

    async export(params) {
        const backend = backendOf(params);
        return onBackend('export', backend, params.principal, async () => {
            const dir = fs.mkdtempSync(path.join(scratchDir, 'export-'));
            try {
                const result = await neo.DatabaseService.exportDatabase({backupPath: dir});
                const files = fs.readdirSync(dir).filter(name => name.endsWith('.jsonl')).sort();
                const records = [];
                for (const file of files) {
                    for (const line of fs.readFileSync(path.join(dir, file), 'utf8').split('\n')) {
                        if (line.trim()) records.push(backupRecordOf(JSON.parse(line)));
                    }
                }
                if (records.length !== (result?.count ?? records.length)) {
                    log(`export: Neo reported ${result?.count} rows and wrote ${records.length}`);
                }
                return {records};
            } finally {
                fs.rmSync(dir, {recursive: true, force: true});
            }
        });
    },

    async restore(params) {
        const backend = backendOf(params);
        const records = Array.isArray(params.records) ? params.records : [];
        return onBackend('restore', backend, params.principal, async () => {
            const dir  = fs.mkdtempSync(path.join(scratchDir, 'restore-'));
            const file = path.join(dir, 'knowledge-base-backup.jsonl');
            try {
                // backup-record-v1 is Neo's export line format ({id, embedding, metadata, document}).
                fs.writeFileSync(file, records.map(record => JSON.stringify(record)).join('\n') + (records.length ? '\n' : ''));
                const result = await neo.DatabaseService.importDatabase({file, mode: 'merge'});
                return {restored: Number(result?.imported ?? 0)};
            } finally {
                fs.rmSync(dir, {recursive: true, force: true});
            }
        });
    },

    async shutdown() {
        await cleanup();
        return {};
    }
};

// The request envelope (ingest's and sync's `envelope`): the push's own top-level fields.
function envelopeOf(params) {
    return params.envelope && typeof params.envelope === 'object' ? params.envelope : {};
}

function backupRecordOf(line) {
    // Neo's export line ({id, embedding, metadata, document}) is backup-record-v1's shape.
    return {id: line.id, embedding: line.embedding, metadata: line.metadata, document: line.document ?? null};
}

function logSummaryErrors(operation, summary) {
    for (const error of summary.errors) {
        log(`${operation}: Neo reported ${error.code}: ${error.message}` +
            (error.details ? ` ${JSON.stringify(error.details).slice(0, 600)}` : ''));
    }
}

function summaryError(summary, call) {
    const first = summary.errors[0];
    const message = summary.errors
        .map(error => String(error.message).startsWith(`${error.code}`) ? error.message : `${error.code}: ${error.message}`)
        .join('; ');
    return new HarnessError(codeFor(first.code, call), message);
}

// An ingestion summary in kit terms. Neo reports problems in `errors` instead of throwing: a
// summary with an error is Neo's report that the call failed, and the call answers with that
// error (mapped by its code), whatever Neo wrote before it; what Neo did write is logged, and the
// kit sees it on its next reads. (A shorter list of ids would be no answer of the protocol: ingest
// answers one id per record.) Neo's summary carries no ids: each record's id is the tenant-aware
// id Neo's own VectorService.applyTenantStamp gave its chunk during this call. Nor does it carry
// warnings: Neo reports each overwritten field as a structured warning through its KB logger
// (VectorService.validateTenantStamp, "overwrite + warning log"); those are the warnings.
function translateIngest(summary, records, call) {
    const warnings = call.spoofWarnings.map(warning => ({field: String(warning.field), chunkId: String(warning.chunkId)}));
    const idOf = index => {
        const entry = call.normalized.get(index);
        if (!entry) return undefined;
        const repoSlug = entry.chunk.repoSlug || entry.tenantContext?.repoSlug;
        return call.assigned.get(chunkKey(repoSlug, entry.chunk));
    };
    const ids = (Array.isArray(records) ? records : []).map((_, index) => idOf(index));

    if (summary.errors?.length > 0) {
        logSummaryErrors('ingest', summary);
        if (call.upserted.size > 0) {
            log(`ingest: Neo wrote ${call.upserted.size} chunk(s) of a batch of ${ids.length} record(s) and reported ` +
                `${summary.errors.length} error(s); the call answers with Neo's error`);
        }
        throw summaryError(summary, call);
    }
    const missing = ids.findIndex(id => typeof id !== 'string');
    if (missing !== -1) {
        throw internal(`Neo reported no error but assigned no id to record ${missing} (ingested ${summary.ingested}, embedded ${summary.embeddingsGenerated})`);
    }
    return {ids, warnings};
}

// --- protocol loop ----------------------------------------------------------------------------------
function respond(message) {
    return new Promise(resolve => protocolOut(JSON.stringify(message) + '\n', resolve));
}

let cleaned = false;
async function cleanup() {
    if (cleaned) return;
    cleaned = true;
    await stopChroma();
    removeScratch();
}

process.on('exit', () => {
    stopChromaSync();
    removeScratch();
});
for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.on(signal, () => {
        log(`received ${signal}; stopping`);
        cleanup().finally(() => process.exit(128 + (os.constants.signals[signal] || 0)));
    });
}
process.on('unhandledRejection', error => {
    log('unhandled rejection (ignored):', error?.stack || String(error));
});

async function handle(line) {
    let request;
    try {
        request = JSON.parse(line);
    } catch (error) {
        await respond({id: null, error: {code: 'KB_HARNESS_REQUEST_INVALID', message: `not JSON: ${error.message}`}});
        return false;
    }
    const id = Number.isInteger(request?.id) ? request.id : null;
    const op = request?.op;
    if (id === null || typeof op !== 'string' || !Object.hasOwn(operations, op)) {
        await respond({id, error: {code: 'KB_HARNESS_REQUEST_INVALID', message: `not a harness-v1 request (id ${JSON.stringify(request?.id)}, op ${JSON.stringify(op)})`}});
        return false;
    }
    const started = process.hrtime.bigint();
    let response;
    try {
        const result = await operations[op](request.params ?? {});
        response = {id, result};
    } catch (error) {
        const translated = error instanceof HarnessError ? error : internal(String(error?.stack || error));
        response = {id, error: {code: translated.code, message: translated.message || translated.code}};
    }
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    log(`#${id} ${op}${request.params?.backend ? ' ' + request.params.backend : ''} -> ${response.error ? response.error.code : 'ok'} (${ms.toFixed(1)} ms)`);
    await respond(response);
    return op === 'shutdown';
}

const input = readline.createInterface({input: process.stdin, crlfDelay: Infinity, terminal: false});
const queue = [];
let busy = false;
let inputClosed = false;

async function pump() {
    if (busy) return;
    busy = true;
    while (queue.length > 0) {
        const line = queue.shift();
        if (!line.trim()) continue;
        const stop = await handle(line);
        if (stop) {
            input.close();
            process.exit(0);
        }
    }
    busy = false;
    if (inputClosed) {
        log('stdin closed; stopping');
        await cleanup();
        process.exit(0);
    }
}

input.on('line', line => {
    queue.push(line);
    pump();
});
input.on('close', () => {
    inputClosed = true;
    pump();
});
