// checks.js runs kafkajs (the version package.json pins) through the interop checks it has an
// API for, against the testbroker program and franz-go's kfake (through
// internal/benchbroker/kfakebroker), each started here with 3 brokers on free loopback ports, and
// prints a Markdown table. It exits 1 if a check fails on either broker.
//
//	cd testbroker/interop/kafkajs && npm ci && node checks.js
//
// kafkajs has no KIP-848 groups and no end-of-partition event; what else it lacks is in `na`.
'use strict';
const { spawn, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Kafka, logLevel, CompressionTypes } = require('kafkajs');

const root = path.resolve(__dirname, '../../..');
const brokerPrograms = { testbroker: './testbroker/cmd/testbroker', kfake: './internal/benchbroker/kfakebroker' };
const checkTimeoutMs = 20000;
const base = 1700000000000; // the timestamp of the first record of offsets-by-timestamp

function eq(got, want, what) {
  if (JSON.stringify(got) !== JSON.stringify(want)) {
    throw new Error(`${what}: got ${JSON.stringify(got)}, want ${JSON.stringify(want)}`);
  }
}

// consumeN reads n records of topic in group (from the start) and returns their values.
async function consumeN(kafka, group, topic, n, opts = {}) {
  const consumer = kafka.consumer({ groupId: group, ...opts });
  await consumer.connect();
  try {
    await consumer.subscribe({ topic, fromBeginning: true });
    const got = [];
    await new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`got ${got.length} of ${n} records`)), checkTimeoutMs);
      consumer.run({
        eachMessage: async ({ message }) => {
          got.push(message.value.toString());
          if (got.length === n) { clearTimeout(timer); resolve(); }
        },
      }).catch(reject);
    });
    return got;
  } finally {
    await consumer.disconnect();
  }
}

// The checks run in order on one cluster: a later one may use what an earlier one left.
const checks = [
  ['metadata', async ({ admin }) => eq((await admin.describeCluster()).brokers.length, 3, 'brokers')],
  ['create-topic', async ({ admin }) => {
    await admin.createTopics({ waitForLeaders: true, topics: [
      { topic: 'js', numPartitions: 3 }, { topic: 'js-ts', numPartitions: 1 }, { topic: 'js-txn', numPartitions: 1 }] });
    const md = await admin.fetchTopicMetadata({ topics: ['js'] });
    eq(md.topics[0].partitions.length, 3, 'partitions');
  }],
  ...['none', 'gzip'].map((codec) => [`produce-${codec}`, async ({ producer }) => {
    const compression = codec === 'gzip' ? CompressionTypes.GZIP : CompressionTypes.None;
    const acks = await producer.send({ topic: 'js', compression, messages: Array.from({ length: 15 }, (_, i) => ({ partition: i % 3, value: `${codec}${i}` })) });
    eq(acks.length, 3, 'partitions written');
  }]),
  ['group-classic', async ({ kafka, admin }) => {
    eq((await consumeN(kafka, 'js-group', 'js', 30)).length, 30, 'records');
    const offsets = await admin.fetchOffsets({ groupId: 'js-group', topics: ['js'] });
    eq(offsets[0].partitions.map((p) => p.offset), ['10', '10', '10'], 'committed offsets');
  }],
  ['resume-committed', async ({ kafka, producer }) => {
    await producer.send({ topic: 'js', messages: [{ partition: 0, value: 'after' }] });
    eq(await consumeN(kafka, 'js-group', 'js', 1), ['after'], 'the record after the commit');
  }],
  ['group-admin', async ({ admin }) => {
    if (!(await admin.listGroups()).groups.some((g) => g.groupId === 'js-group')) throw new Error('js-group not listed');
    eq((await admin.describeGroups(['js-group'])).groups[0].state, 'Empty', 'state');
    await admin.deleteGroups(['js-group']);
    if ((await admin.listGroups()).groups.some((g) => g.groupId === 'js-group')) throw new Error('js-group still listed');
  }],
  ['list-offsets', async ({ admin }) => {
    const p0 = (await admin.fetchTopicOffsets('js')).find((p) => p.partition === 0);
    eq([p0.low, p0.high], ['0', '11'], 'earliest and latest of partition 0');
  }],
  ['offsets-by-timestamp', async ({ admin, producer }) => {
    // Ten records a second apart in one batch: a record's own timestamp finds it, one between
    // two records finds the later.
    await producer.send({ topic: 'js-ts', messages: Array.from({ length: 10 }, (_, i) => ({ value: `r${i}`, timestamp: String(base + i * 1000) })) });
    eq((await admin.fetchTopicOffsetsByTimestamp('js-ts', base + 3000))[0].offset, '3', 'at record 3');
    eq((await admin.fetchTopicOffsetsByTimestamp('js-ts', base + 4500))[0].offset, '5', 'between records 4 and 5');
  }],
  ['delete-records', async ({ admin }) => {
    await admin.deleteTopicRecords({ topic: 'js-ts', partitions: [{ partition: 0, offset: '4' }] });
    eq((await admin.fetchTopicOffsets('js-ts'))[0].low, '4', 'earliest');
  }],
  ['describe-configs', async ({ admin }) => {
    const res = await admin.describeConfigs({ resources: [{ type: 2, name: 'js', configNames: ['retention.ms'] }] });
    eq(res.resources[0].configEntries[0].configValue, '604800000', 'retention.ms');
  }],
  ['txn-commit-abort', async ({ kafka }) => {
    const tp = kafka.producer({ transactionalId: 'js-txn', idempotent: true, maxInFlightRequests: 1 });
    await tp.connect();
    try {
      let tx = await tp.transaction();
      await tx.send({ topic: 'js-txn', messages: [{ value: 'aborted' }] });
      await tx.abort();
      tx = await tp.transaction();
      await tx.send({ topic: 'js-txn', messages: [{ value: 'committed' }] });
      await tx.commit();
    } finally {
      await tp.disconnect();
    }
  }],
  ['read-committed', async ({ kafka }) => {
    eq(await consumeN(kafka, 'js-rc', 'js-txn', 1, { readUncommitted: false }), ['committed'], 'read_committed');
  }],
];

// startBroker builds and starts a broker program with 3 brokers and resolves to it and its seeds.
function startBroker(name, dir) {
  const bin = path.join(dir, name);
  execFileSync('go', ['build', '-o', bin, brokerPrograms[name]], { cwd: root, stdio: 'inherit' });
  const proc = spawn(bin, ['-brokers', '3', '-addr', '127.0.0.1:0'], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const seeds = [];
    let buf = '';
    proc.on('exit', (code) => reject(new Error(`${name} exited (${code}) at start`)));
    proc.stdout.on('data', (d) => {
      buf += d;
      for (const m of buf.matchAll(/ listening on (\S+)\n/g)) seeds.push(m[1]);
      buf = buf.slice(buf.lastIndexOf('\n') + 1);
      if (seeds.length === 3) { proc.removeAllListeners('exit'); resolve({ proc, seeds }); }
    });
  });
}

async function runOn(name, dir) {
  const { proc, seeds } = await startBroker(name, dir);
  const results = {};
  const kafka = new Kafka({ clientId: 'kshare-interop', brokers: seeds, logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
  try {
    await admin.connect();
    await producer.connect();
    for (const [check, run] of checks) {
      try {
        await run({ kafka, admin, producer });
        results[check] = 'pass';
      } catch (e) {
        results[check] = 'FAIL';
        console.error(`kafkajs/${name}/${check}: ${e.message}`);
      }
    }
  } finally {
    await producer.disconnect().catch(() => {});
    await admin.disconnect().catch(() => {});
    proc.kill('SIGTERM');
  }
  return results;
}

(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kafkajs-interop-'));
  try {
    const tb = await runOn('testbroker', dir);
    const kf = await runOn('kfake', dir);
    console.log('| check | kafkajs (testbroker / kfake) |\n|---|---|');
    for (const [check] of checks) console.log(`| ${check} | ${tb[check]} / ${kf[check]} |`);
    process.exitCode = checks.some(([c]) => tb[c] !== 'pass' || kf[c] !== 'pass') ? 1 : 0;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
})().catch((e) => { console.error(e); process.exitCode = 1; });
