// A deterministic, offline embedding for the Neo harness: the algorithm of kbconform's
// reference HashingEmbedding (reference_impl/kbconform_reference/embedding.py), in JavaScript.
//
// Each case-folded word token (Unicode letters, digits and '_') adds +1 or -1 to one of
// `dimensions` buckets: BLAKE2b with an 8-byte digest, read big-endian, picks the bucket
// (digest mod dimensions) and the sign (the digest's top bit: set = +1). A text without tokens
// is the unit vector on bucket 0. Rows are L2-normalized in float32.
//
// Every intermediate value is a small integer until the final division, so float32 rounding
// (Math.fround) reproduces numpy's float32 result bit for bit: sums of squares are exact, and
// a square root or quotient computed in double and rounded once to float32 is the correctly
// rounded float32 result.

const MASK64 = (1n << 64n) - 1n;

const IV = [
    0x6a09e667f3bcc908n, 0xbb67ae8584caa73bn, 0x3c6ef372fe94f82bn, 0xa54ff53a5f1d36f1n,
    0x510e527fade682d1n, 0x9b05688c2b3e6c1fn, 0x1f83d9abfb41bd6bn, 0x5be0cd19137e2179n
];

const SIGMA = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0]
];

const rotr = (x, n) => ((x >> n) | (x << (64n - n))) & MASK64;

function compress(h, block, t, last) {
    const m = new Array(16);
    for (let i = 0; i < 16; i++) {
        let word = 0n;
        for (let b = 7; b >= 0; b--) word = (word << 8n) | BigInt(block[i * 8 + b]);
        m[i] = word;
    }
    const v = [...h, ...IV];
    v[12] ^= t & MASK64;
    v[13] ^= (t >> 64n) & MASK64;
    if (last) v[14] ^= MASK64;

    const g = (a, b, c, d, x, y) => {
        v[a] = (v[a] + v[b] + x) & MASK64;
        v[d] = rotr(v[d] ^ v[a], 32n);
        v[c] = (v[c] + v[d]) & MASK64;
        v[b] = rotr(v[b] ^ v[c], 24n);
        v[a] = (v[a] + v[b] + y) & MASK64;
        v[d] = rotr(v[d] ^ v[a], 16n);
        v[c] = (v[c] + v[d]) & MASK64;
        v[b] = rotr(v[b] ^ v[c], 63n);
    };

    for (let round = 0; round < 12; round++) {
        const s = SIGMA[round % 10];
        g(0, 4, 8, 12, m[s[0]], m[s[1]]);
        g(1, 5, 9, 13, m[s[2]], m[s[3]]);
        g(2, 6, 10, 14, m[s[4]], m[s[5]]);
        g(3, 7, 11, 15, m[s[6]], m[s[7]]);
        g(0, 5, 10, 15, m[s[8]], m[s[9]]);
        g(1, 6, 11, 12, m[s[10]], m[s[11]]);
        g(2, 7, 8, 13, m[s[12]], m[s[13]]);
        g(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (let i = 0; i < 8; i++) h[i] ^= v[i] ^ v[i + 8];
}

/**
 * BLAKE2b (RFC 7693) without a key, with an output of `outLength` bytes (1..64).
 * @param {Uint8Array} data
 * @param {number} outLength
 * @returns {Uint8Array}
 */
export function blake2b(data, outLength = 64) {
    const h = [...IV];
    h[0] ^= 0x01010000n ^ BigInt(outLength);
    const blocks = Math.max(1, Math.ceil(data.length / 128));
    for (let i = 0; i < blocks; i++) {
        const block = new Uint8Array(128);
        const chunk = data.subarray(i * 128, (i + 1) * 128);
        block.set(chunk);
        const last = i === blocks - 1;
        const t = BigInt(last ? data.length : (i + 1) * 128);
        compress(h, block, t, last);
    }
    const out = new Uint8Array(outLength);
    for (let i = 0; i < outLength; i++) out[i] = Number((h[i >> 3] >> BigInt(8 * (i & 7))) & 0xffn);
    return out;
}

// Python's `\w` in a str pattern: characters that are alphanumeric (letters and numbers) or '_'.
const TOKEN = /[\p{L}\p{N}_]+/gu;

/**
 * An approximation of Python's str.casefold(): full case folding is lower(upper(x)) for
 * almost every character (ß -> ss, ς -> σ, ﬁ -> fi); Python and JavaScript can differ on a
 * handful of characters (e.g. the dotless ı), which only changes which bucket such a token
 * lands in, never determinism.
 * @param {string} text
 * @returns {string}
 */
export function casefold(text) {
    // JavaScript lower-cases a word-final sigma to 'ς'; case folding maps every sigma to 'σ'.
    return text.toUpperCase().toLowerCase().replace(/\u03c2/g, '\u03c3');
}

const encoder = new TextEncoder();

export class HashingEmbedding {
    constructor(dimensions = 256) {
        this.dimensions = dimensions;
        this.cache      = new Map();
    }

    get name() {
        return `hashing-${this.dimensions}`;
    }

    bucket(token) {
        let hit = this.cache.get(token);
        if (hit === undefined) {
            const digest = blake2b(encoder.encode(token), 8);
            let value = 0n;
            for (const byte of digest) value = (value << 8n) | BigInt(byte);
            hit = [Number(value % BigInt(this.dimensions)), (value >> 63n) ? 1 : -1];
            if (this.cache.size > 200000) this.cache.clear();
            this.cache.set(token, hit);
        }
        return hit;
    }

    /**
     * @param {string} text
     * @returns {number[]} float32 values, as plain numbers
     */
    embed(text) {
        const row = new Float32Array(this.dimensions);
        for (const token of casefold(String(text)).match(TOKEN) || []) {
            const [index, sign] = this.bucket(token);
            row[index] += sign;
        }
        let sum = 0;
        for (const value of row) sum += value * value;
        if (sum === 0) {
            row[0] = 1;
            sum = 1;
        }
        const norm = Math.fround(Math.sqrt(sum));
        return Array.from(row, value => Math.fround(value / norm));
    }

    embedAll(texts) {
        return texts.map(text => this.embed(text));
    }
}
