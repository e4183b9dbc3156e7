// The private Chroma server Neo runs against: found (KBCONFORM_CHROMA or `chroma` on PATH),
// started on a free port in a scratch folder, watched by a watchdog that outlives the harness,
// stopped, and the scratch folder removed.

import {spawn} from 'node:child_process';
import fs      from 'node:fs';
import net     from 'node:net';
import os      from 'node:os';
import path    from 'node:path';

import {internal} from '../../kbconform/_harness_runtime/kbharness.mjs';

import {realFetch} from './calls.mjs';
import {log}       from './log.mjs';

const CHROMA_START_DEADLINE_MS = Number(process.env.KBCONFORM_NEO_CHROMA_DEADLINE_MS || 60000);

export let scratchDir = null;
export let chroma     = null;   // {proc, port, watchdog, version}

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

// `chroma --version`, asked while the server starts (both load the same Python package first):
// the server's own /api/v2/version answers its API's version, not the release's.
async function chromaVersion(binary) {
    return new Promise(resolve => {
        const proc = spawn(binary, ['--version'], {stdio: ['ignore', 'pipe', 'ignore']});
        let out = '';
        const timer = setTimeout(() => proc.kill('SIGKILL'), CHROMA_START_DEADLINE_MS);
        proc.stdout.on('data', data => { out += data; });
        proc.on('error', () => { clearTimeout(timer); resolve('unknown'); });
        proc.on('close', () => { clearTimeout(timer); resolve(out.trim().replace(/^chroma\s+/i, '') || 'unknown'); });
    });
}

export async function startChroma() {
    const binary  = findChroma();
    const dataDir = path.join(scratchDir, 'chroma-data');
    fs.mkdirSync(dataDir, {recursive: true});

    let lastOutput = '';
    const started = Date.now();
    const version = chromaVersion(binary);
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
                chroma = {proc, port, watchdog, binary, version: await version};
                log(`chroma ${chroma.version} (${binary}) listening on 127.0.0.1:${port}, pid ${proc.pid}, data ${dataDir} ` +
                    `(${Date.now() - started} ms)`);
                return;
            }
            await sleep(50);
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

export async function stopChroma() {
    if (!chroma) return;
    const {proc, watchdog} = chroma;
    chroma = null;
    try {
        if (watchdog.exitCode === null) process.kill(watchdog.pid, 'SIGKILL');
    } catch {
        // already gone
    }
    if (proc.exitCode !== null || proc.signalCode !== null) return;
    // Killed outright: its data lives in the scratch folder, removed next, so a graceful stop
    // (1-4 s on a loaded machine) would keep nothing.
    const exited = new Promise(resolve => proc.once('exit', resolve));
    proc.kill('SIGKILL');
    await Promise.race([exited, sleep(2000)]);
    log(`chroma (pid ${proc.pid}) stopped`);
}

export function stopChromaSync() {
    if (!chroma) return;
    try { process.kill(chroma.watchdog.pid, 'SIGKILL'); } catch { /* gone */ }
    try { chroma.proc.kill('SIGKILL'); } catch { /* gone */ }
    chroma = null;
}

export function removeScratch() {
    if (scratchDir) {
        try {
            fs.rmSync(scratchDir, {recursive: true, force: true});
        } catch (error) {
            log(`could not remove ${scratchDir}: ${error.message}`);
        }
        scratchDir = null;
    }
}

/** Where the scratch folder goes: a memory file system (/dev/shm) with 1 GiB free, where the
 *  Chroma server's writes, whose data dies with the harness, cost no disk flush each (the
 *  kit's ChromaServer does the same); else, or when $TMPDIR says where temporary files go,
 *  the system's temporary folder. */
function scratchParent() {
    if (process.env.TMPDIR) return os.tmpdir();
    try {
        const stats = fs.statfsSync('/dev/shm');
        fs.accessSync('/dev/shm', fs.constants.W_OK | fs.constants.X_OK);
        if (stats.bavail * stats.bsize >= 2 ** 30) return '/dev/shm';
    } catch {
        // no memory file system here
    }
    return os.tmpdir();
}

/** The scratch folder of this harness, made on first use. */
export function ensureScratch() {
    if (!scratchDir) scratchDir = fs.mkdtempSync(path.join(scratchParent(), 'kbconform-neo-'));
    return scratchDir;
}
