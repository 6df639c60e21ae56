/**
 * The fencing counter of a topic (shard): `<prefix>:dq:{<topic>}:fence`, a string holding the last
 * claim token handed out on that shard, in the topic's hash tag (same cluster slot as its jobs).
 *
 * One counter per topic shard, not per job: a claim batch reads and writes it once whatever the
 * number of jobs it takes (no command per job), Redis memory stays one key per shard whatever the
 * number of job ids (a per-job counter must outlive its job to cover a job id scheduled again, so it
 * would grow with every id ever used), and the tokens of one shard are ordered by claim, so a row
 * several jobs write (an order that an `order.expire` and an `order.fulfil` both update) can be
 * fenced with one column. The job's own last token (kept in its body) is a floor as well, so a job's
 * tokens only grow even when the counter was lost and the server clock went back.
 *
 * @param jobsKey the topic shard's `jobs` hash key (`RedisKeySpace.topic(name).jobs`)
 */
export function fenceKeyOf(jobsKey: string): string {
  return `${jobsKey.slice(0, -':jobs'.length)}:fence`;
}
