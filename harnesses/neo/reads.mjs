// Neo's reads, each one call of its MCP tools as a tenant makes it (export, which has no
// tool, calls DatabaseService): query, get, list, ask and export.

import fs   from 'node:fs';
import path from 'node:path';

import {internal} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {hitOf, hitOfRanked, onBackend, viaTool} from './backends.mjs';
import {scratchDir} from './chroma.mjs';
import {log} from './log.mjs';
import {neo} from './setup.mjs';

export async function query(backend, params) {
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
        // The detail: the tool's own QueryService.queryDocuments, which setup.mjs asks with
        // includeMetadata, kept whole (each source's top chunk, for the hit's id and metadata).
        const detail = call.lastQuery?.results || [];
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
}

export async function get(backend, params) {
    return onBackend('get', backend, params.principal, async call => {
        const document = await viaTool('get_document_by_id', {id: params.id}, call);
        return {hit: hitOf(document.id, document.content, document.metadata)};
    });
}

export async function list(backend, params) {
    return onBackend('list', backend, params.principal, async call => {
        const result = await viaTool('list_documents', {limit: params.limit, offset: params.offset}, call);
        return {hits: (result?.documents || []).map(document => hitOf(document.id, document.content, document.metadata))};
    });
}

export async function ask(backend, params) {
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
}

export async function exportRecords(backend, params) {
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
}

function backupRecordOf(line) {
    // Neo's export line ({id, embedding, metadata, document}) is backup-record-v1's shape.
    return {id: line.id, embedding: line.embedding, metadata: line.metadata, document: line.document ?? null};
}
