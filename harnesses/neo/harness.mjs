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
// This file is the harness's table of operations; the protocol (framing, ids, handles, errors
// as data) is the kit's harness runtime, kbharness.mjs. Its parts, one concern each:
//   chroma.mjs    the private Chroma server and the scratch folder
//   setup.mjs     Neo loaded and configured, and its manifest
//   calls.mjs     per-request bookkeeping: the fault switch and the store accounting
//   errors.mjs    Neo's errors in kbconform's codes
//   backends.mjs  a backend's collection, and each call run on it as the principal
//   reads.mjs     query, get, list, ask, export
//   writes.mjs    ingest, applyDeletionSignal, sync, maintain, restore
//
// stdout carries protocol responses only: everything else (console, Neo's logs, Chroma's output)
// goes to stderr, the harness log.

import os from 'node:os';

import {HarnessError, claimStdout, internal, invalid, serve} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {closeBackend, openBackend, setFault} from './backends.mjs';
import {removeScratch, stopChroma, stopChromaSync} from './chroma.mjs';
import {log} from './log.mjs';
import {ask, exportRecords, get, list, query} from './reads.mjs';
import {ensureStarted, manifest} from './setup.mjs';
import {applyDeletionSignal, ingest, maintain, restore, sync} from './writes.mjs';

claimStdout();

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

const neoHarness = {
    manifest,

    async start() {
        try {
            await ensureStarted();
        } catch (error) {
            throw error instanceof HarnessError ? error : internal(`could not start Neo's knowledge base: ${error?.stack || error}`);
        }
    },

    open : openBackend,
    close: closeBackend,
    fault: setFault,

    // The tenant-namespace profile's operations.
    ingest, query, get, list, ask, applyDeletionSignal, sync, maintain, restore,
    export: exportRecords,
    // Neo has no count tool, and parses workspaces with its own sources (feature workspace-scan
    // is declined): neither is served, as a request the harness cannot carry out.
    async count() {
        throw invalid('count is not served: Neo\'s knowledge base has no count tool');
    },
    async scan() {
        throw invalid('scan is not served: Neo parses workspaces with its own sources (feature workspace-scan)');
    },

    errorFor: error => ['KB_HARNESS_INTERNAL', String(error?.stack || error)],

    async shutdown() {
        await cleanup();
    }
};

await serve(neoHarness, {name: 'neo-harness'});
