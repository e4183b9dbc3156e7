// Neo's errors in kbconform's codes: a code Neo throws or reports, read with what the store did
// during the call (calls.mjs), a refusal of a tool's arguments, a failed tool result, an
// ingestion summary's errors.

import {HarnessError} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {log} from './log.mjs';

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
/** The kbconform code of a Neo code, given what the store did during this request. */
export function codeFor(neoCode, call) {
    if (neoCode && NEO_CODE_MAP[neoCode]) return NEO_CODE_MAP[neoCode];
    if (!neoCode || NEO_STORE_CODES.has(neoCode)) {
        if (call.storeFailures > 0) return 'KB_BACKEND_UNAVAILABLE';
        if (call.storeRefusals > 0) return 'KB_CONTRACT_VIOLATION';
    }
    return 'KB_HARNESS_INTERNAL';
}

/** Maps an error Neo threw onto a kbconform code, keeping Neo's message. */
export function translateThrown(error, call, operation) {
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
export const isZodError = error => error?.name === 'ZodError' && Array.isArray(error.issues);

export function zodRefusal(tool, error) {
    const shown = error.issues.slice(0, 3).map(issue =>
        `${(issue.path || []).join('.') || '(arguments)'}: ${String(issue.message).slice(0, 120)}`);
    const more = error.issues.length > shown.length ? `; ${error.issues.length - shown.length} more` : '';
    return new HarnessError('KB_CONTRACT_VIOLATION', `${tool} refused its arguments: ${shown.join('; ')}${more}`);
}

// A tool result with an `error` key is a failed call (BaseServer.formatToolResult answers it
// with isError: true); its `code` is mapped like any other Neo code.
export function toolResultError(result, call) {
    const text = String(result.message ?? result.error);
    return new HarnessError(codeFor(result.code, call), result.code ? `${result.code}: ${text}` : text);
}

export function logSummaryErrors(operation, summary) {
    for (const error of summary.errors) {
        log(`${operation}: Neo reported ${error.code}: ${error.message}` +
            (error.details ? ` ${JSON.stringify(error.details).slice(0, 600)}` : ''));
    }
}

export function summaryError(summary, call) {
    const first = summary.errors[0];
    const message = summary.errors
        .map(error => String(error.message).startsWith(`${error.code}`) ? error.message : `${error.code}: ${error.message}`)
        .join('; ');
    return new HarnessError(codeFor(first.code, call), message);
}
