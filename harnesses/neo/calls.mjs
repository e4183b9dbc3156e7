// Per-request bookkeeping: one kit call at a time, followed by `requestScope` through its async
// work into Neo and the Chroma client; each HTTP request the client sends is one store call (the
// fault switch consulted before it), and each Chroma collection method's outcome is noted, for
// the error translation (errors.mjs).

import {AsyncLocalStorage} from 'node:async_hooks';

import {StoreFault} from '../../kbconform/_harness_runtime/kbharness.mjs';

// Chroma client errors that say the store refused the request as invalid (4xx, client-side checks).
const CHROMA_REFUSALS = new Set([
    'ChromaClientError', 'ChromaValueError', 'InvalidArgumentError', 'InvalidCollectionError', 'ChromaUniqueError'
]);
// Chroma client errors that say the store could not answer.
const CHROMA_FAILURES = new Set(['ChromaConnectionError', 'ChromaServerError']);

// One kit request at a time; `requestScope` follows its async work into Neo and the Chroma client.
export const requestScope = new AsyncLocalStorage();

export function newCall(operation, backend, {internal: isInternal = false} = {}) {
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

// The backend's fault switch, consulted for a kit call's store call (never the harness's own).
const switchOf = call => (call && !call.internal && call.backend?.faults ? call.backend.switch : null);

// Every HTTP request the Chroma client sends is one store call: the fault switch is consulted
// before it, and what the store answered is noted for error translation.
export const realFetch = globalThis.fetch;
globalThis.fetch = async function harnessFetch(input, init) {
    const call = requestScope.getStore();
    if (call) call.fetches++;
    try {
        await switchOf(call)?.consult('chroma.fetch');
    } catch (error) {
        if (!(error instanceof StoreFault)) throw error;
        call.storeFailures++;
        throw new TypeError('fetch failed', {cause: error});
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

/** Runs `fn` as the harness's own call (no fault switch, no store accounting). */
export async function runInternal(operation, fn) {
    return requestScope.run(newCall(operation, null, {internal: true}), fn);
}

// Store-call accounting on the Chroma collection object: ids of writes and deletes that
// succeeded, and the class of every error a collection method threw.
export function instrumentCollection(collection) {
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
