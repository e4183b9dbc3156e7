// kbharness: the harness-v1 runtime in JavaScript, Node's standard library only.
//
// A harness is a small object holding its system's calls; this module speaks the protocol
// around it (schemas/harness-v1.md): one JSON request per line on stdin, one JSON response per
// line on stdout, ids checked and echoed, errors answered as data, backend handles kept, `hello`
// answered with the harness's manifest and `shutdown` (or the end of stdin) releasing every
// backend. The operations and their required params are read from harness-v1.schema.json,
// never retyped. It is kbharness.py's twin: the same contract, the same answers.
//
// The harness object has (nothing else is read):
//   manifest                the manifest hello returns (its isolationProfile names the profile),
//                           or a function returning it (awaited);
//   start()                 optional, awaited before hello answers: start the system;
//   open(params, handle)    a new backend (any value) for open's params, which requests will
//                           name `handle`; close(backend) releases it;
//   fault(backend, plan)    optional: set a fault plan, return how often the switch was
//                           consulted (a FaultSwitch of this module does both: its set());
//                           without it fault is refused as a request it cannot carry out;
//   <op>(backend, params)   one method per operation of its profile, named as the operation
//                           (addMemory, createKb, ...), returning the result object;
//   operations              optional: the names of operations the schema does not name (a
//                           profile registered by another package adds its own), served by
//                           their methods, params unchecked;
//   errorFor(error)         optional: [code, message] of an error the system threw; without it,
//                           or when it answers null, the error is KB_HARNESS_INTERNAL;
//   shutdown(backends)      optional: release the backends still open and whatever else the
//                           harness holds; without it each open backend is closed.
//
// An operation fails with HarnessError (invalid, notImplemented, or any code). Run it with
// serve(harness); call claimStdout() first, before loading a library that might print, so that
// stdout carries responses only.
//
// Kept in kbconform (kbconform/_harness_runtime, shipped in the wheel) so that `kbconform
// new-harness` copies this very file beside a new harness; the harnesses of the repository
// import it from there.

import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import readline from 'node:readline';
import {fileURLToPath} from 'node:url';

export const PROTOCOL = 'harness-v1';
const SCHEMA = 'harness-v1.schema.json';
// The operations of every profile, which the runtime answers itself or hands to the harness's
// own open, close and fault.
export const LIFECYCLE = new Set(['hello', 'open', 'close', 'fault', 'shutdown']);

/** An error response: a kbconform error code and the message the system gave. */
export class HarnessError extends Error {
    constructor(code, message) {
        super(message);
        this.code = code;
    }
}

/** A request the harness cannot read or carry out (KB_HARNESS_REQUEST_INVALID). */
export const invalid = message => new HarnessError('KB_HARNESS_REQUEST_INVALID', message);
/** An operation the system does not offer, or the harness does not serve yet. */
export const notImplemented = message => new HarnessError('KB_NOT_IMPLEMENTED', message);
/** A failure of the harness or the system that no other code names. */
export const internal = message => new HarnessError('KB_HARNESS_INTERNAL', message);

/** What a store call raises when the fault plan fails it (map it to KB_BACKEND_UNAVAILABLE). */
export class StoreFault extends Error {
    constructor(message) {
        super(message);
        this.name = 'StoreFault';
    }
}

/** Whether `plan` is a fault plan other than null: {pass, fail, stores?, hang?}. */
export function isFaultPlan(plan) {
    if (plan === null || typeof plan !== 'object' || Array.isArray(plan) || !('fail' in plan)) return false;
    const {pass: passing, fail: failing, hang} = plan;
    const counts = Number.isInteger(passing) && passing >= 0 &&
        (failing === null || (Number.isInteger(failing) && failing >= 1));
    return counts && (hang === undefined || hang === null || (typeof hang === 'number' && hang >= 0 && hang <= 60));
}

/** A hung store call: `seconds`, or until the promise `replaced` settles. */
function hang(seconds, replaced) {
    return new Promise(resolve => {
        const timer = setTimeout(resolve, seconds * 1000);
        replaced.then(() => { clearTimeout(timer); resolve(); });
    });
}

/** A backend's store-fault switch (feature fault-injection, schemas/harness-v1.md): set() takes
 *  each fault request's plan; the backend awaits consult() once before every call it makes to
 *  its store, which waits the plan's hang (or until the plan is replaced) and throws StoreFault
 *  if the plan fails the call. `sleep(seconds, replaced)` is how a hang waits: `seconds`, or
 *  until the promise `replaced` settles (a test may record it instead). */
export class FaultSwitch {
    constructor({sleep = hang} = {}) {
        this.plan = null;
        this.consulted = 0;
        this.sleep = sleep;
        this.arm();
    }

    /** A new promise settled when the plan in force is replaced. */
    arm() {
        this.replaced = new Promise(resolve => { this.release = resolve; });
    }

    /** Make `plan` the plan (null: no store call fails), refused as invalid unless isFaultPlan;
     *  answer how many store calls consulted the plan it replaces. */
    set(plan) {
        if (plan !== null && !isFaultPlan(plan)) throw invalid(`fault: not a fault plan: ${JSON.stringify(plan)}`);
        const previous = this.consulted;
        this.consulted = 0;
        this.plan = plan;
        this.release();
        this.arm();
        return previous;
    }

    /** Before the store call `call`: throw StoreFault if the plan fails it. A plan whose stores
     *  lacks `store` (kb-grant) neither fails nor counts it; null ignores them. */
    async consult(call, store = null) {
        const plan = this.plan;
        if (plan && store !== null && plan.stores != null && !plan.stores.includes(store)) return;
        const index = this.consulted++;
        const replaced = this.replaced;
        if (!plan) return;
        const {pass: passing, fail: failing} = plan;
        if (index < passing || (failing !== null && index >= passing + failing)) return;
        if (plan.hang) await this.sleep(plan.hang, replaced);
        throw new StoreFault(`store unavailable: ${call} failed (injected store fault)`);
    }
}

/** Stands in for a store object (a database client): each switched method awaits
 *  fault.consult(`LABEL.METHOD`), then calls through (so it answers a promise); other properties
 *  are the store's. `methods` names the switched methods; null switches every method but close
 *  and those whose name starts with _. */
export function switchedStore(target, fault, label, methods = null) {
    return new Proxy(target, {
        get(store, name) {
            const value = Reflect.get(store, name, store);
            const switched = typeof name === 'string' && typeof value === 'function' &&
                (methods ? methods.includes(name) : !name.startsWith('_') && name !== 'close');
            if (!switched) return value;
            return async (...args) => {
                await fault.consult(`${label}.${name}`);
                return value.apply(store, args);
            };
        }
    });
}

/** harness-v1.schema.json: beside this file (a copy), in the kit's schemas (a wheel) or at the
 *  top of a source checkout. */
export function schemaPath() {
    const here = path.dirname(fileURLToPath(import.meta.url));
    const candidates = [path.join(here, SCHEMA), path.join(here, '..', 'schemas', SCHEMA),
        path.join(here, '..', '..', 'schemas', SCHEMA)];
    const found = candidates.find(candidate => fs.existsSync(candidate));
    if (!found) throw new Error(`${SCHEMA} is neither beside ${here} nor in kbconform's schemas`);
    return found;
}

/** harness-v1's operations, as its schema names them: op -> its required params. */
export function loadOperations(file = schemaPath()) {
    const definitions = JSON.parse(fs.readFileSync(file, 'utf8')).$defs;
    return new Map(definitions.request.properties.op.enum.map(
        op => [op, definitions[`${op}Params`]?.required ?? []]));
}

/** A request's id as echoed: an integer >= 0, else null. */
export function requestId(raw) {
    return typeof raw === 'number' && Number.isInteger(raw) && raw >= 0 ? raw : null;
}

/** One line of JSON; a result with no JSON form is answered as the harness's own failure. */
export function encode(message) {
    try {
        return JSON.stringify(message);
    } catch (error) {
        const failed = {code: 'KB_HARNESS_INTERNAL', message: `the result has no JSON form: ${error.message}`};
        return JSON.stringify({id: message.id ?? null, error: failed});
    }
}

let claimed = null;

/** Keep stdout for responses: everything else written to it (console included) goes to stderr,
 *  the harness log. Returns the writer of responses. */
export function claimStdout() {
    if (!claimed) {
        const write = process.stdout.write.bind(process.stdout);
        process.stdout.write = (chunk, encoding, callback) => process.stderr.write(chunk, encoding, callback);
        for (const method of ['log', 'info', 'warn', 'debug', 'trace', 'dir', 'table']) {
            console[method] = (...args) => console.error(...args);
        }
        claimed = line => new Promise(resolve => write(line, resolve));
    }
    return claimed;
}

/** One harness served: its backends by handle, and each request answered. */
export class Runtime {
    constructor(harness, operations, log) {
        this.harness = harness;
        this.operations = operations;
        this.served = new Set([...operations.keys(), ...(harness.operations ?? [])].filter(
            op => !LIFECYCLE.has(op) && typeof harness[op] === 'function'));
        this.backends = new Map();
        this.opened = 0;
        this.profile = null;
        // Whether requests may be answered at once: the manifest declares concurrency threads.
        this.atOnce = false;
        this.log = log;
    }

    /** The response to one request line, and whether the harness is to end. */
    async answer(line) {
        const started = process.hrtime.bigint();
        let id = null;
        let op = '?';
        let response;
        try {
            let request;
            try {
                request = JSON.parse(line);
            } catch (error) {
                throw invalid(`the request is not JSON: ${error.message}`);
            }
            if (request === null || typeof request !== 'object' || Array.isArray(request)) {
                throw invalid('the request is not a JSON object');
            }
            id = requestId(request.id);
            if (id === null) throw invalid("the request's id is not an integer >= 0");
            if (typeof request.op !== 'string') throw invalid('the request has no op');
            op = request.op;
            const params = request.params;
            if (params === null || typeof params !== 'object' || Array.isArray(params)) {
                throw invalid(`${op}: the request's params is not an object`);
            }
            response = {id, result: await this.call(op, params)};
        } catch (error) {
            const failed = error instanceof HarnessError ? error
                : internal(`${error?.name ?? 'Error'}: ${error?.message ?? error}`);
            if (!(error instanceof HarnessError)) this.log(String(error?.stack || error));
            response = {id, error: {code: failed.code, message: failed.message || failed.code}};
        }
        const ms = Number(process.hrtime.bigint() - started) / 1e6;
        this.log(`#${id} ${op} -> ${response.error ? response.error.code : 'ok'} (${ms.toFixed(1)} ms)`);
        return [response, op === 'shutdown' && 'result' in response];
    }

    async call(op, params) {
        if (!this.operations.has(op) && !this.served.has(op)) throw invalid(`unknown operation ${JSON.stringify(op)}`);
        if (!LIFECYCLE.has(op) && !this.served.has(op)) {
            const profile = this.profile ?? (await this.manifest()).isolationProfile ?? 'tenant-namespace';
            throw invalid(`${op} is not an operation of the ${profile} profile (the manifest's isolationProfile)`);
        }
        const missing = (this.operations.get(op) ?? []).filter(name => !Object.hasOwn(params, name));
        if (missing.length > 0) throw invalid(`${op}: params lack ${missing.join(', ')}`);
        if (op === 'hello') {
            if (params.protocol !== PROTOCOL) {
                throw invalid(`this harness speaks ${PROTOCOL}, not ${JSON.stringify(params.protocol)}`);
            }
            if (typeof this.harness.start === 'function') await this.harness.start();
            const manifest = await this.manifest();
            this.profile = manifest.isolationProfile ?? 'tenant-namespace';
            this.atOnce = manifest.concurrency === 'threads';
            return {protocol: PROTOCOL, manifest};
        }
        if (op === 'shutdown') return {};
        try {
            return await this.onBackend(op, params);
        } catch (error) {
            if (error instanceof HarnessError) throw error;
            const mapped = (typeof this.harness.errorFor === 'function' ? this.harness.errorFor(error) : null)
                ?? ['KB_HARNESS_INTERNAL', `${error?.name ?? 'Error'}: ${error?.message ?? error}`];
            if (mapped[0] === 'KB_HARNESS_INTERNAL') this.log(`${op}: ${error?.stack || error}`);
            throw new HarnessError(...mapped);
        }
    }

    async manifest() {
        const {manifest} = this.harness;
        return typeof manifest === 'function' ? await manifest.call(this.harness) : manifest;
    }

    async onBackend(op, params) {
        if (op === 'open') {
            const opened = `b${++this.opened}`;
            this.backends.set(opened, await this.harness.open(params, opened));
            return {backend: opened};
        }
        const handle = params.backend;
        if (typeof handle !== 'string' || !this.backends.has(handle)) {
            throw invalid(`unknown backend handle ${JSON.stringify(handle)}: open did not return it, or close released it`);
        }
        const backend = this.backends.get(handle);
        if (op === 'close') {
            this.backends.delete(handle);
            await this.harness.close(backend);
            return {};
        }
        if (op === 'fault') {
            if (typeof this.harness.fault !== 'function') {
                throw invalid('fault: the backend was opened without faults (fault-injection is not offered)');
            }
            return {consulted: await this.harness.fault(backend, params.plan)};
        }
        return this.harness[op](backend, params);
    }

    /** The harness's own shutdown with the backends still open, or else each one closed. */
    async release() {
        const left = [...this.backends.values()];
        this.backends.clear();
        if (typeof this.harness.shutdown === 'function') {
            await this.harness.shutdown(left);
            return;
        }
        for (const backend of left) {
            try {
                await this.harness.close(backend);
            } catch (error) {
                this.log(`close failed: ${error?.message ?? error}`);
            }
        }
    }
}

// Set in a harness's environment by the kit that starts it for HTTP: HOST:PORT to listen on.
export const HTTP_ADDRESS = 'KBCONFORM_HARNESS_HTTP';

/** Serves `harness` on stdin and stdout until shutdown or the end of stdin, then exits 0. With
 *  HTTP_ADDRESS in the environment, serves POST /v1/{op} there instead, requests at once
 *  answered at once, until shutdown (serveHttp). */
export async function serve(harness, {name = 'harness', schema} = {}) {
    const respond = claimStdout();
    const log = message => process.stderr.write(`[${name}] ${message}\n`);
    const runtime = new Runtime(harness, loadOperations(schema), log);
    if (process.env[HTTP_ADDRESS]) {
        try {
            await serveHttp(runtime, process.env[HTTP_ADDRESS], respond);
            await runtime.release();
        } catch (error) {
            log(`stopping: ${error?.stack || error}`);
        }
        process.exit(0);
    }
    const lines = readline.createInterface({input: process.stdin, crlfDelay: Infinity, terminal: false});
    try {
        for await (const line of lines) {
            if (!line.trim()) continue;
            const [response, done] = await runtime.answer(line);
            await respond(encode(response) + '\n');
            if (done) break;
        }
        if (!lines.closed) lines.close();
        await runtime.release();
    } catch (error) {
        log(`stopping: ${error?.stack || error}`);
    }
    process.exit(0);
}

/** Answers POST /v1/{op} on `address` (HOST:PORT; port 0: a free one) on kept connections
 *  (schemas/harness-v1.md, Transports), requests at once answered at once when the manifest
 *  declares `concurrency: threads`, else in turn; the URL is the first line written with
 *  `respond`. Resolves once shutdown is answered. */
export async function serveHttp(runtime, address, respond) {
    const at = address.lastIndexOf(':');
    const host = address.slice(0, at) || '127.0.0.1';
    const port = Number(address.slice(at + 1) || 0);
    let finish;
    const finished = new Promise(resolve => { finish = resolve; });
    // Requests overlap only for a backend that declares it serves callers at once
    // (schemas/concurrency.md); any other's wait their turn, as kbconform serve does.
    let last = Promise.resolve();
    const answered = line => {
        if (runtime.atOnce) return runtime.answer(line);  // known once hello has read the manifest
        const mine = last.then(() => runtime.answer(line));
        last = mine.catch(() => {});
        return mine;
    };
    const server = http.createServer({keepAliveTimeout: 300_000, noDelay: true}, (request, reply) => {
        const chunks = [];
        request.on('data', chunk => chunks.push(chunk));
        request.on('end', async () => {
            const send = (status, message, close = false) => {
                const body = encode(message);
                reply.writeHead(status, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body),
                    ...(close ? {Connection: 'close'} : {})});
                reply.end(body);
            };
            const op = request.url.startsWith('/v1/') ? request.url.slice(4) : null;
            if (op === null || !(runtime.operations.has(op) || runtime.served.has(op))) {
                send(404, {id: null, error: {code: 'KB_HARNESS_REQUEST_INVALID', message: `no operation at ${JSON.stringify(request.url)}`}});
                return;
            }
            if (request.method !== 'POST') {
                send(405, {id: null, error: {code: 'KB_HARNESS_REQUEST_INVALID', message: `${request.method} is not allowed: POST only`}});
                return;
            }
            const line = Buffer.concat(chunks).toString('utf8');
            let named = op;
            try {
                named = JSON.parse(line)?.op ?? op;
            } catch {
                // not JSON: the runtime's answer says what is wrong with it
            }
            if (named !== op) {
                send(400, {id: null, error: {code: 'KB_HARNESS_REQUEST_INVALID', message: `the message's op must be ${JSON.stringify(op)}, as in the path`}});
                return;
            }
            const [response, done] = await answered(line);
            send(response.error?.code === 'KB_HARNESS_REQUEST_INVALID' ? 400 : 200, response, done);
            if (done) finish();
        });
    });
    await new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, resolve);
    });
    const bound = server.address();
    await respond(`http://${bound.address}:${bound.port}\n`);
    await finished;
    server.close();
    server.closeAllConnections?.();
}
