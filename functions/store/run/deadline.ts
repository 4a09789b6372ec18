/** A run's deadline timer: a message of the steps queue (functions/domain/run-deadline.ts). */
import { SendMessageCommand } from '@aws-sdk/client-sqs';
import type { Deps } from '../../deps.ts';
import { timerDelaySeconds } from '../../domain/run-deadline.ts';
import { sqsMessageBody, stepMessageGroup } from '../queues.ts';

/**
 * The steps queue's message that ends run `jobId` at `dueAt` if it is still in progress (its schema
 * is functions/app/run-deadline.ts's). It rides the steps queue because the step executor already
 * holds every grant a cancel needs (the run's items, the webhooks queue), so the timer adds no
 * queue, consumer or grant; `teamId` puts it in its team's group of the fair queue, as the run's
 * steps are.
 */
export interface DeadlineTimer {
  kind: 'deadline';
  jobId: string;
  teamId: string;
  /** ISO 8601. */
  dueAt: string;
}

/** Sends the deadline's timer, delayed until it is due (at most SQS's 15 minutes: then it is sent on). */
export const sendDeadlineMessage = async (deps: Deps, message: DeadlineTimer, delaySeconds?: number) => {
  await deps.sqs.send(
    new SendMessageCommand({
      QueueUrl: deps.queueUrls.steps,
      MessageBody: sqsMessageBody(message),
      ...stepMessageGroup(message.teamId),
      DelaySeconds: delaySeconds ?? timerDelaySeconds(new Date(message.dueAt), deps.now()),
    }),
  );
};
