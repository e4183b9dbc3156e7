// Neo's writes, each one ingest_source_files push as a remote tenant makes it (restore, which
// has no tool, calls DatabaseService): ingest, applyDeletionSignal, sync, maintain and restore,
// and an ingestion summary read in kit terms.

import fs   from 'node:fs';
import path from 'node:path';

import {internal} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {envelopeOf, onBackend, viaTool} from './backends.mjs';
import {scratchDir} from './chroma.mjs';
import {logSummaryErrors, summaryError} from './errors.mjs';
import {log} from './log.mjs';
import {chunkKey, neo} from './setup.mjs';

export async function ingest(backend, params) {
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
}

export async function applyDeletionSignal(backend, params) {
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
}

export async function sync(backend, params) {
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
}

export async function maintain(backend, params) {
    return onBackend('maintain', backend, params.principal, async call => {
        // The tool manage_knowledge_base (toolService.mjs:76 adds viaMcp: true); a result
        // with `error` (KB_SYNC_VOLUME_EXCEEDED) is a failed call.
        await viaTool('manage_knowledge_base', {action: params.operation}, call);
        return {};
    });
}

export async function restore(backend, params) {
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
