import { type Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import { wildcardResourceFinding } from './nag.ts';

/** What a route or worker may touch: the union of `Route['grants']` and `Worker['grants']`. */
export interface Access {
  table: 'none' | 'read' | 'readwrite';
  stepsQueue?: 'send';
  webhooksQueue?: 'send';
  bucket?: 'read' | 'readwrite';
}

export interface GrantTargets {
  table: ITable;
  bucket: IBucket;
  stepsQueue: IQueue;
  webhooksQueue: IQueue;
}

/**
 * Turns an `Access` entry into `grant*()` calls, and acknowledges, on the function that receives
 * them, exactly the cdk-nag wildcard findings those grants produce, each with its reason.
 */
export class Grants {
  readonly #consumer: Stack;
  readonly #targets: GrantTargets;

  constructor(consumer: Stack, targets: GrantTargets) {
    this.#consumer = consumer;
    this.#targets = targets;
  }

  apply(fn: IFunction, access: Access): void {
    const { table, bucket, stepsQueue, webhooksQueue } = this.#targets;
    const acknowledge = (id: string, reason: string) => Validations.of(fn).acknowledge({ id, reason });

    if (access.table !== 'none') {
      if (access.table === 'read') table.grantReadData(fn);
      else table.grantReadWriteData(fn);
      acknowledge(
        `AwsSolutions-IAM5[${wildcardResourceFinding(this.#consumer, table, table.tableArn, '/index/*')}]`,
        'The table grant covers its own global secondary indexes (GSI1-GSI3 from lib/definitions.ts), ' +
          'which the function queries; the wildcard cannot reach any other table.',
      );
    }
    if (access.stepsQueue === 'send') stepsQueue.grantSendMessages(fn);
    if (access.webhooksQueue === 'send') webhooksQueue.grantSendMessages(fn);

    if (access.bucket === 'read' || access.bucket === 'readwrite') {
      bucket.grantRead(fn);
      for (const action of ['s3:GetObject*', 's3:GetBucket*', 's3:List*']) {
        acknowledge(
          `AwsSolutions-IAM5[Action::${action}]`,
          'bucket.grantRead() on the library bucket only: the function reads stored files and presigns ' +
            'two-hour GET URLs for them.',
        );
      }
      acknowledge(
        `AwsSolutions-IAM5[${wildcardResourceFinding(this.#consumer, bucket, bucket.bucketArn, '/*')}]`,
        'Object keys are per team and run (teams/<team>/runs/<job>/<node>/...) and created at run time, so ' +
          'the grant covers every object of the library bucket; team isolation is enforced in code ' +
          'against the authenticated API key.',
      );
    }
    if (access.bucket === 'readwrite') {
      bucket.grantPut(fn);
      acknowledge(
        'AwsSolutions-IAM5[Action::s3:Abort*]',
        'bucket.grantPut() on the library bucket only: s3:AbortMultipartUpload lets the step executor ' +
          'clean up a failed upload of a large step output.',
      );
    }
  }
}
