/**
 * The cost model's counts (docs/operations.md, "Cost model"), measured through the real path: a 10-step chain
 * started over HTTP, run by the step executor from the steps queue, ended by its webhook. Only
 * what is deterministic is asserted: DynamoDB capacity units, SQS requests and Lambda invocations
 * (handler time is the bench's business), API Gateway requests and the log lines the invocations
 * write at INFO (bench/cost-logs.ts), and the operator events the run gives (its Run Started and
 * Run Finished, put by the real EventPublisher on the table's stream: PutEvents entries, and the
 * publisher's invocations priced at one per event). Their price, at most $0.000035 ($0.000034 before
 * the settlement added the run to the team's usage cell, 2 write units), is already above
 * the bench's $0.00003 target for the whole (docs/decisions/pricing.md, "What a run's requests cost").
 */
import { randomUUID } from 'node:crypto';
import { describe, expect, inject, it } from 'vitest';
import { itemSizeBytes, operatorEventCost, priceRun } from '../bench/cost-meter.ts';
import { measureChainRunCost } from '../bench/cost-run.ts';
import { idleCost, idleStages, measureIdleTick } from '../bench/idle-cost.ts';
import { provision } from '../local/provision.ts';

describe('the cost of a 10-step run', () => {
  it('a 10-step chain with a webhook takes 3 invocations, 35 write units, 6 SQS requests, 1 API request, 2 operator events: under $0.000035 all in before compute', {
    timeout: 180_000,
  }, async () => {
    const resources = await provision({ prefix: `c${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const { meter, runs, left } = await measureChainRunCost(resources, { runs: 2, chainLength: 10 });
    const per = (n: number) => n / runs;
    // The start, the step executor (the chain runs on in the invocation of its first step), the webhook.
    expect(meter.lambda.byFunction).toEqual({ RunWorkflow: runs, StepExecutor: runs, WebhookDelivery: runs });
    // Every unit AWS bills, index entries in transactions included (bench/cost-meter.ts): the start's
    // transaction 12 (the run, team, project, key month and lock items, 2 each; the run's entries in the
    // queued-runs index and the run list, 1 each), the key's rate counter 1, each step's end 1 (10), the
    // end's transaction 8 (the run, team and lock items, 2 each; the run leaving the queued-runs index
    // and its list entry's change, 1 each), the webhook's attempt marked sending and its outcome 2.
    // The chain's counts are carried to the end's transaction (functions/app/step/settle-step.ts):
    // 9 UpdateItems of the run item fewer. 43 before, when each step counted itself.
    // The end's transaction also adds the run to the team's usage: one cell item (day, workflow, key,
    // first tag, project; under 1 KB) 2, and no model item, as no model charged (docs/decisions/usage.md).
    expect(per(meter.dynamoDb.writeUnits + meter.dynamoDb.refusedWriteUnits)).toBe(35);
    expect(Object.fromEntries(Object.entries(meter.dynamoDb.writeUnitsBy).map(([what, n]) => [what, per(n)]))).toEqual({
      'TransactWriteItems RUN': 4,
      'TransactWriteItems RUN (index entries)': 4,
      'TransactWriteItems TEAM': 6,
      'TransactWriteItems KEYSPEND': 2,
      'TransactWriteItems WFLOCK': 4,
      'TransactWriteItems USAGE': 2,
      'UpdateItem RATE': 1,
      'UpdateItem STEP': 10,
      'UpdateItem RUN': 2,
    });
    // Each read at least its minimum (bench/cost-meter.ts); the start reads the team's stored bytes (a
    // run start is refused while the team is at its storage quota). 39 when each step of the chain
    // read its predecessor's item again, strongly consistent (27 of them).
    expect(per(meter.dynamoDb.readUnits)).toBeLessThanOrEqual(21);
    // The step path's: the first step reads the run and its own item, strongly consistent; steps 2-10,
    // run in its invocation, take their predecessor's item as its finish returned it and read the
    // run and their own item eventually consistent: half a unit each.
    expect(per(meter.dynamoDb.readUnitsBy['BatchGetItem RUN+STEP strong'] ?? 0)).toBe(2);
    expect(per(meter.dynamoDb.readUnitsBy['BatchGetItem RUN+STEP eventual'] ?? 0)).toBe(9);
    expect(meter.dynamoDb.readUnitsBy['BatchGetItem RUN+STEP×2 strong']).toBeUndefined();
    // The root step's send, receive and delete; the webhook's the same.
    expect(per(meter.sqs.total)).toBeLessThanOrEqual(6);
    expect(per(meter.api.requests)).toBe(1); // the start; the webhook tells the client
    // Logged at INFO: the webhook's attempt; an EMF line per invocation that recorded a metric.
    expect(per(meter.logs.events)).toBeLessThanOrEqual(2);
    expect(per(meter.logs.emfEvents)).toBeLessThanOrEqual(3);
    // Per step: one write for the step; the counts go with the end; no transaction but the start's and the end's.
    expect(per(meter.dynamoDb.calls.byCommand.TransactWriteItemsCommand ?? 0)).toBe(2);
    // Operator events: Run Started and Run Finished, one PutEvents entry each (one 64 KB chunk), both
    // on the bus; the publisher priced at one invocation per event (the local poller may batch both).
    const events = operatorEventCost(meter, runs);
    expect(events.entries).toBe(2);
    expect(events.chunks).toBe(2);
    expect(events.delivered).toBe(2);
    expect(events.largestEntryBytes).toBeLessThan(1024);
    expect(events.measuredInvocations).toBeGreaterThanOrEqual(1);
    expect(events.invocations).toBe(2);
    const withoutCompute = priceRun(
      {
        ...meter,
        lambda: { ...meter.lambda, ms: 0, msByFunction: {} },
        operatorEvents: { ...meter.operatorEvents, ms: 0 },
      },
      runs,
    ).total;
    expect(withoutCompute).toBeLessThanOrEqual(0.000035);
    // What each run leaves for the retention (bench/cost-retained.ts prices it): its item, its 10
    // steps and its webhook delivery, about 4 KB with their overhead and their list index entry; no object.
    expect(left.items / runs).toBe(12);
    expect(left.tableBytes / runs).toBeLessThanOrEqual(4_300);
    // Its list entry, in GSI5 alone (GSI4 held a second copy).
    expect(left.indexBytes / runs).toBeLessThanOrEqual(550);
    expect(left.s3Bytes).toBe(0);
  });

  it('an idle dev stage costs at most $2 a month without the free tier; prod adds only its rollback alarms, web ACL and origin secret, at most $15', {
    timeout: 120_000,
  }, async () => {
    const resources = await provision({ prefix: `c${randomUUID().slice(0, 8)}`, ...inject('emulators') });
    const tick = await measureIdleTick(resources, 3);
    expect(tick.emfEvents).toBe(0); // an idle tick records no metric
    expect(tick.readUnits).toBe(4); // the price item (strongly consistent), six empty index queries
    // The dispatcher tick's compute is its wall time on this machine, which a loaded suite inflates
    // (a test asserts no wall-clock time): the totals take its requests, not its measured ms.
    const steady = { ...tick, ms: 0 };
    const totals = Object.fromEntries(
      idleStages.map((stage) => [stage.name, idleCost(stage.context, steady).reduce((sum, i) => sum + i.dollars, 0)]),
    );
    // $1.30 of it is the alarms' 13 metrics (docs/deploy.md, What a stage costs idle); $2.50 with the
    // 19 they were before one dead-letter queue took every dead letter and one metric each the steps
    // failing for an operator's reason and the API's failures (docs/decisions/bill.md). The rest is
    // $0.52 of Lambda's idle SQS pollers and $0.08 more.
    const alarms = idleCost(idleStages[0].context, steady).find((item) => item.what.startsWith('CloudWatch alarms'));
    expect(alarms?.what).toMatch(/^CloudWatch alarms: 13 alarm metrics/);
    expect(totals.dev).toBeLessThanOrEqual(2);
    // prod is dev's month plus what guards production, and nothing else: its canary's six
    // rollback alarms (two per aliased function), the edge's web ACL with its rules and the edge's
    // origin secret (the budget is one of an account's two free ones; an idle table's backups are a
    // few KB).
    const prod = idleCost(idleStages[1].context, steady);
    const waf = prod.find((item) => item.what.startsWith('AWS WAF'))?.dollars ?? 0;
    expect(waf).toBeGreaterThan(5);
    const originSecret = prod.find((item) => item.what.startsWith("the edge's origin secret"))?.dollars;
    expect(originSecret).toBe(0.4);
    // Within a cent: prod keeps its logs 30 days, dev 7 (a tick's few KB).
    expect(totals['prod, provider in SSM'] ?? 0).toBeCloseTo((totals.dev ?? 0) + 6 * 0.1 + waf + 0.4, 2);
    expect(totals['prod, provider in SSM']).toBeLessThanOrEqual(15);
    // A Secrets Manager secret is $0.40 a month more.
    expect(totals['prod, provider in Secrets Manager']).toBeCloseTo((totals['prod, provider in SSM'] ?? 0) + 0.4, 6);
  });

  it('sizes items as DynamoDB bills them', () => {
    expect(itemSizeBytes({ PK: 'ab', n: 12345 })).toBe(2 + 2 + 1 + 4);
    expect(itemSizeBytes({ m: { a: 'xy' }, l: [true, null] })).toBe(1 + (3 + 1 + 2 + 1) + 1 + (3 + 2 + 2));
    expect(itemSizeBytes({ s: new Set(['é']) })).toBe(1 + 2);
  });
});
