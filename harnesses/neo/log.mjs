// The Neo harness's log: stderr, each line marked as the harness's.

export const log = (...parts) => process.stderr.write(`[neo-harness] ${parts.join(' ')}\n`);
