/**
 * Sticky rollout assignment, the same in the service and every SDK (docs/typescript.md,
 * "Rollouts"): a caller with key K gets the candidate when the first 8 bytes of
 * sha256(`${rollout_id}:${K}`), read as a big-endian unsigned integer, modulo 10,000 are
 * below percent * 100. A key keeps its side while the rollout lasts, and raising the
 * percent only moves keys from the baseline to the candidate.
 */

const encoder = new TextEncoder();

/** The key's bucket in the rollout, 0-9,999. */
export async function bucket(rolloutId: string, key: string): Promise<number> {
  const digest = await crypto.subtle.digest("SHA-256", encoder.encode(`${rolloutId}:${key}`));
  return Number(new DataView(digest).getBigUint64(0, false) % 10000n);
}

/** Whether `key` gets the candidate of rollout `rolloutId` at `percent` (0-100). */
export async function assign(rolloutId: string, key: string, percent: number): Promise<boolean> {
  return (await bucket(rolloutId, key)) < percent * 100;
}
