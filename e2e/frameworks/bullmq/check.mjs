// BullMQ, unchanged, against a Redis endpoint on 127.0.0.1: every BullMQ operation is a
// Lua script (EVALSHA, falling back to EVAL), so this is a check of the server's
// scripting as a real job queue uses it.
//
//     node check.mjs <port>
//
// Run from a directory where `npm ci` installed package.json / package-lock.json beside
// this file. Prints one line per check; exits 0 only when every check holds, non-zero
// with a message naming what went wrong otherwise, and gives up after OVERALL_MS.

import { Queue, Worker } from 'bullmq';

const OVERALL_MS = 90_000;
const QUEUE = 'memoria-bullmq-check';

const port = Number(process.argv[2]);
if (!Number.isInteger(port) || port <= 0 || port > 65535) {
  console.error('usage: node check.mjs <port>');
  process.exit(2);
}

const overall = setTimeout(() => {
  console.error(`FAIL: BullMQ check did not finish within ${OVERALL_MS / 1000}s`);
  process.exit(3);
}, OVERALL_MS);

// BullMQ makes its own ioredis connections from these options; workers block
// (BZPOPMIN), which BullMQ requires maxRetriesPerRequest: null for.
const connection = {
  host: '127.0.0.1',
  port,
  maxRetriesPerRequest: null,
  // Don't reconnect for ever to a server that is gone: the overall timeout would hide why.
  retryStrategy: (times) => (times > 20 ? null : Math.min(times * 100, 1000)),
};

// 'error' events from the queue or the workers, with how often each came: any fails the check.
const errors = new Map();
const noteError = (who) => (e) => {
  const msg = `${who}: ${e?.message ?? e}`;
  errors.set(msg, (errors.get(msg) ?? 0) + 1);
};
const errorSummary = () => [...errors].map(([m, n]) => (n > 1 ? `${m} (x${n})` : m)).join('; ');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function check(cond, what) {
  if (!cond) throw new Error(what);
}

function ok(what) {
  console.log(`ok: ${what}`);
}

// Processor invocations, per job id, and which worker ran them.
const runs = new Map(); // id -> [{ worker, attemptsMade }]
const runsOf = (id) => runs.get(id) ?? [];

function processorFor(workerName) {
  return async (job) => {
    const list = runs.get(job.id) ?? [];
    list.push({ worker: workerName, attemptsMade: job.attemptsMade });
    runs.set(job.id, list);
    switch (job.name) {
      case 'add':
        await sleep(10); // long enough for the two workers to contend
        return { sum: job.data.a + job.data.b, tag: job.data.tag };
      case 'flaky':
        if (list.length < 3) throw new Error(`flaky attempt ${list.length} fails on purpose`);
        return `done on attempt ${list.length}`;
      case 'delayed':
        return 'ran after promotion';
      case 'doomed':
        throw new Error('doomed job fails on purpose');
      default:
        throw new Error(`unknown job name ${job.name}`);
    }
  };
}

// Polls until the job is in one of `states`; returns the fresh job.
async function waitForState(queue, id, states, timeoutMs, what) {
  const deadline = Date.now() + timeoutMs;
  let state;
  for (;;) {
    state = await queue.getJobState(id);
    if (states.includes(state)) return queue.getJob(id);
    if (Date.now() > deadline) {
      throw new Error(
        `${what}: job ${id} is '${state}' after ${timeoutMs / 1000}s, expected ${states.join(' or ')}` +
          ` (processor ran ${runsOf(id).length} time(s))`,
      );
    }
    await sleep(50);
  }
}

const queue = new Queue(QUEUE, { connection });
queue.on('error', noteError('queue'));
const workers = [];

async function main() {
  await queue.waitUntilReady();
  const client = await queue.client;
  ok(`connected to 127.0.0.1:${port} (PING ${await client.ping()})`);

  await queue.obliterate({ force: true });
  const start = await queue.getJobCounts();
  check(
    Object.values(start).every((n) => n === 0),
    `queue not empty after obliterate: ${JSON.stringify(start)}`,
  );
  ok('obliterated the queue left from an earlier run');

  for (const name of ['w1', 'w2']) {
    const w = new Worker(QUEUE, processorFor(name), { connection, concurrency: 4 });
    w.on('error', noteError(`worker ${name}`));
    workers.push(w);
  }
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  ok('two workers on the same queue are ready');

  // 1. add + addBulk, results checked.
  const singles = [];
  for (let i = 0; i < 5; i++) {
    singles.push(await queue.add('add', { a: i, b: 100, tag: `single-${i}` }));
  }
  const bulk = await queue.addBulk(
    Array.from({ length: 20 }, (_, i) => ({ name: 'add', data: { a: i, b: 1000, tag: `bulk-${i}` } })),
  );
  check(bulk.length === 20, `addBulk returned ${bulk.length} jobs, expected 20`);
  const ids = new Set([...singles, ...bulk].map((j) => j.id));
  check(ids.size === 25, `25 added jobs got ${ids.size} distinct ids`);
  for (const j of [...singles, ...bulk]) {
    const done = await waitForState(queue, j.id, ['completed', 'failed'], 20_000, 'add job');
    check(done.finishedOn, `job ${j.id} has no finishedOn`);
    check(
      (await queue.getJobState(j.id)) === 'completed',
      `add job ${j.id} (${j.data.tag}) failed: ${done.failedReason}`,
    );
    const want = { sum: j.data.a + j.data.b, tag: j.data.tag };
    check(
      JSON.stringify(done.returnvalue) === JSON.stringify(want),
      `job ${j.id} returned ${JSON.stringify(done.returnvalue)}, expected ${JSON.stringify(want)}`,
    );
  }
  ok('5 added + 20 addBulk jobs completed with the expected return values');

  // 2. Retries with a fixed backoff: fails twice, completes on the third attempt (each
  // retry waits in the delayed set until its backoff is due).
  const flaky = await queue.add('flaky', {}, { attempts: 3, backoff: { type: 'fixed', delay: 200 } });
  const flakyDone = await waitForState(queue, flaky.id, ['completed', 'failed'], 20_000, 'flaky job');
  check(
    (await queue.getJobState(flaky.id)) === 'completed',
    `flaky job ended failed: ${flakyDone.failedReason} (attemptsMade ${flakyDone.attemptsMade})`,
  );
  check(flakyDone.attemptsMade === 3, `flaky job attemptsMade ${flakyDone.attemptsMade}, expected 3`);
  check(flakyDone.returnvalue === 'done on attempt 3', `flaky job returned ${JSON.stringify(flakyDone.returnvalue)}`);
  const fr = runsOf(flaky.id);
  check(fr.length === 3, `flaky processor ran ${fr.length} times, expected 3`);
  ok(`job with attempts: 3 and fixed backoff completed on attempt 3 (attemptsMade ${flakyDone.attemptsMade})`);

  // 3. Delayed job: it waits in the delayed set (a delay far longer than the check, so
  // nothing here depends on how fast the machine is) until promoted, then runs once.
  const delayed = await queue.add('delayed', {}, { delay: 3_600_000 });
  const waiting = await queue.getJobState(delayed.id);
  check(waiting === 'delayed', `delayed job is '${waiting}' after adding, expected 'delayed'`);
  check((await queue.getDelayedCount()) === 1, 'the delayed set does not hold the delayed job');
  check(runsOf(delayed.id).length === 0, 'delayed job ran before it was due');
  await delayed.promote();
  const delayedDone = await waitForState(queue, delayed.id, ['completed', 'failed'], 20_000, 'delayed job');
  check((await queue.getJobState(delayed.id)) === 'completed', `delayed job failed: ${delayedDone.failedReason}`);
  check(delayedDone.returnvalue === 'ran after promotion', `delayed job returned ${JSON.stringify(delayedDone.returnvalue)}`);
  ok(`delayed job waited in the delayed set until promoted, then ran`);

  // 4. A job that always fails ends in the failed set with its reason.
  const doomed = await queue.add('doomed', { why: 'always fails' }, { attempts: 2, backoff: { type: 'fixed', delay: 100 } });
  const doomedDone = await waitForState(queue, doomed.id, ['completed', 'failed'], 20_000, 'doomed job');
  check((await queue.getJobState(doomed.id)) === 'failed', 'doomed job did not end failed');
  check(
    doomedDone.failedReason === 'doomed job fails on purpose',
    `doomed job failedReason ${JSON.stringify(doomedDone.failedReason)}`,
  );
  check(doomedDone.attemptsMade === 2, `doomed job attemptsMade ${doomedDone.attemptsMade}, expected 2`);
  check(runsOf(doomed.id).length === 2, `doomed processor ran ${runsOf(doomed.id).length} times, expected 2`);
  const failedIds = (await queue.getFailed()).map((j) => j.id);
  check(
    failedIds.length === 1 && failedIds[0] === doomed.id,
    `failed set holds ${JSON.stringify(failedIds)}, expected [${doomed.id}]`,
  );
  ok(`always-failing job is in the failed set after 2 attempts: "${doomedDone.failedReason}"`);

  // 5. Final counts, and no job processed more often than its attempts.
  await sleep(300); // let any stray duplicate run show itself
  const counts = await queue.getJobCounts();
  const want = { completed: 27, failed: 1 };
  for (const [k, n] of Object.entries(counts)) {
    check(n === (want[k] ?? 0), `getJobCounts ${k} = ${n}, expected ${want[k] ?? 0}: ${JSON.stringify(counts)}`);
  }
  ok(`getJobCounts: ${JSON.stringify(counts)}`);

  const expectedRuns = new Map([...ids].map((id) => [id, 1]));
  expectedRuns.set(flaky.id, 3).set(delayed.id, 1).set(doomed.id, 2);
  for (const id of runs.keys()) check(expectedRuns.has(id), `processor ran unknown job ${id}`);
  for (const [id, n] of expectedRuns) {
    const got = runsOf(id);
    check(
      got.length === n,
      `job ${id} processed ${got.length} time(s) (by ${got.map((r) => r.worker).join(',')}), expected ${n}`,
    );
  }
  const byWorker = {};
  for (const list of runs.values()) for (const r of list) byWorker[r.worker] = (byWorker[r.worker] ?? 0) + 1;
  ok(`no job processed twice by the two workers (runs per worker ${JSON.stringify(byWorker)})`);

  check(errors.size === 0, `error events: ${errorSummary()}`);
}

async function cleanup() {
  const closing = Promise.allSettled([...workers.map((w) => w.close()), queue.close()]);
  const timedOut = await Promise.race([closing.then(() => false), sleep(10_000).then(() => true)]);
  if (timedOut) throw new Error('closing the workers and the queue took over 10s');
}

let code = 0;
try {
  await main();
} catch (e) {
  console.error(`FAIL: ${e?.message ?? e}`);
  if (errors.size) console.error(`error events: ${errorSummary()}`);
  code = 1;
}
try {
  await cleanup();
  if (code === 0) ok('workers and queue closed');
} catch (e) {
  console.error(`FAIL: ${e?.message ?? e}`);
  code = 1;
}
clearTimeout(overall);
if (code === 0) console.log('bullmq: all checks passed');
process.exit(code);
