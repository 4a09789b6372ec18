import { Aws, type Stack, Validations } from 'aws-cdk-lib';
import type { ITable } from 'aws-cdk-lib/aws-dynamodb';
import type { IEventBus } from 'aws-cdk-lib/aws-events';
import { PolicyStatement } from 'aws-cdk-lib/aws-iam';
import type { IFunction } from 'aws-cdk-lib/aws-lambda';
import type { IBucket } from 'aws-cdk-lib/aws-s3';
import type { IQueue } from 'aws-cdk-lib/aws-sqs';
import type { Access } from '../platform/access.ts';
import { dataTable, libraryBucket } from '../platform/definitions.ts';
import { parseProviderSecret } from '../platform/secret-refs.ts';
import { wildcardResourceFinding } from './nag.ts';
import type { ServiceFunction } from './service-function.ts';
import type { ProviderSecret } from './stages.ts';

export interface GrantTargets {
  table: ITable;
  bucket: IBucket;
  stepsQueue: IQueue;
  webhooksQueue: IQueue;
  /** The stage's operator event bus. */
  eventBus: IEventBus;
  /** The function PythonSandbox steps run on. */
  pythonRunner: IFunction;
  /** The stage's provider secrets. */
  providerSecrets: readonly ProviderSecret[];
  /** The Bedrock model ids (or inference profile ids) the stage may invoke; none: Bedrock is off. */
  bedrockModels: readonly string[];
  /** Name prefix of the stage's team connection secrets. */
  connectionSecretPrefix: string;
}

/**
 * What invoking a Bedrock model id needs: the foundation model in this region; for a cross-Region
 * inference profile (`us.`, `eu.`, `apac.`, `global.`), the profile in this account and the model in
 * each Region it routes to.
 */
export const bedrockModelArns = (id: string): string[] => {
  const profile = /^(us|eu|apac|global)\.(.+)$/.exec(id);
  if (!profile) return [`arn:${Aws.PARTITION}:bedrock:${Aws.REGION}::foundation-model/${id}`];
  return [
    `arn:${Aws.PARTITION}:bedrock:${Aws.REGION}:${Aws.ACCOUNT_ID}:inference-profile/${id}`,
    `arn:${Aws.PARTITION}:bedrock:*::foundation-model/${profile[2]}`,
  ];
};

/** ARNs of the secrets named `name` in the stack's account and region, as IAM matches them. */
const secretArnOf = (name: string) =>
  `arn:${Aws.PARTITION}:secretsmanager:${Aws.REGION}:${Aws.ACCOUNT_ID}:secret:${name}`;

/**
 * The ARN of a secret given by name (Secrets Manager appends `-` and six random characters, which
 * `??????` matches and nothing longer does) or by full ARN.
 */
export const secretArn = (nameOrArn: string) =>
  nameOrArn.startsWith('arn:') ? nameOrArn : secretArnOf(`${nameOrArn}-??????`);

/** The ARN of the SSM parameter `name` (with or without its leading `/`) in the stack's account and region. */
export const parameterArn = (name: string) =>
  `arn:${Aws.PARTITION}:ssm:${Aws.REGION}:${Aws.ACCOUNT_ID}:parameter/${name.replace(/^\//, '')}`;

/**
 * Turns an `Access` entry into one policy statement per resource with exactly the listed actions,
 * and acknowledges, on the function that receives them, exactly the cdk-nag wildcard findings
 * those statements produce, each with its reason.
 */
export class Grants {
  readonly #consumer: Stack;
  readonly #targets: GrantTargets;

  constructor(consumer: Stack, targets: GrantTargets) {
    this.#consumer = consumer;
    this.#targets = targets;
  }

  apply(service: ServiceFunction, access: Access): void {
    const { table, bucket, stepsQueue, webhooksQueue } = this.#targets;
    const allow = (actions: string[], resources: string[]) =>
      service.role.addToPrincipalPolicy(new PolicyStatement({ actions, resources }));
    const acknowledge = (id: string, reason: string) => Validations.of(service).acknowledge({ id, reason });

    if (access.table?.length) {
      allow(
        access.table.map((action) => `dynamodb:${action}`),
        [table.tableArn],
      );
    }
    if (access.indexes?.length) {
      for (const name of access.indexes) {
        if (!dataTable.indexes.some((index) => index.name === name)) throw new Error(`no index ${name} on the table`);
      }
      allow(
        ['dynamodb:Query'],
        access.indexes.map((name) => `${table.tableArn}/index/${name}`),
      );
    }
    if (access.stepsQueue === 'send') allow(['sqs:SendMessage'], [stepsQueue.queueArn]);
    if (access.webhooksQueue === 'send') allow(['sqs:SendMessage'], [webhooksQueue.queueArn]);
    if (access.eventBus === 'put') allow(['events:PutEvents'], [this.#targets.eventBus.eventBusArn]);
    if (access.pythonRunner === 'invoke') allow(['lambda:InvokeFunction'], [this.#targets.pythonRunner.functionArn]);
    if (access.bedrock === 'invoke' && this.#targets.bedrockModels.length > 0) {
      allow(['bedrock:InvokeModel'], this.#targets.bedrockModels.flatMap(bedrockModelArns));
      for (const id of this.#targets.bedrockModels) {
        const profile = /^(us|eu|apac|global)\.(.+)$/.exec(id);
        if (!profile) continue;
        acknowledge(
          `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:bedrock:*::foundation-model/${profile[2]}]`,
          `The cross-Region inference profile ${id} routes each call to this model in one of its Regions, ` +
            'chosen by Bedrock: the model is named exactly, the Region cannot be.',
        );
      }
    }

    if (access.bucket?.length) {
      const objects = `/${libraryBucket.objectPrefix}*`;
      allow(
        access.bucket.map((action) => `s3:${action}`),
        [`${bucket.bucketArn}${objects}`],
      );
      acknowledge(
        `AwsSolutions-IAM5[${wildcardResourceFinding(this.#consumer, bucket, bucket.bucketArn, objects)}]`,
        'Object keys are per team and run (teams/<team>/runs/<job>/<node>/...) and created at run time, so ' +
          'the grant covers the teams/ keys of the library bucket; team isolation is enforced in code ' +
          'against the authenticated API key.',
      );
    }

    if (access.uploads?.length) {
      const uploads = `/${libraryBucket.uploadPrefix}*`;
      allow(
        access.uploads.map((action) => `s3:${action}`),
        [`${bucket.bucketArn}${uploads}`],
      );
      acknowledge(
        `AwsSolutions-IAM5[${wildcardResourceFinding(this.#consumer, bucket, bucket.bucketArn, uploads)}]`,
        'Uploaded files are keyed uploads/<team>/<fileId>, created at run time, so the grant covers the ' +
          'uploads/ keys of the library bucket; team isolation is enforced in code against the authenticated API key.',
      );
    }

    if (access.secrets === 'providers-and-connections') {
      const { providerSecrets, connectionSecretPrefix } = this.#targets;
      const sources = providerSecrets.map((p) => {
        const source = parseProviderSecret(p.secretName);
        if (!source) throw new Error(`${p.provider}: ${p.secretName} names no secret or parameter`);
        return source;
      });
      allow(
        ['secretsmanager:GetSecretValue'],
        [
          ...sources.flatMap((s) => (s.store === 'secretsmanager' ? [secretArn(s.name)] : [])),
          secretArnOf(`${connectionSecretPrefix}*`),
        ],
      );
      allow(
        ['ssm:GetParameter'],
        [
          ...sources.flatMap((s) => (s.store === 'ssm' ? [parameterArn(s.name)] : [])),
          parameterArn(`${connectionSecretPrefix}*`),
        ],
      );
      acknowledge(
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:${connectionSecretPrefix}*]`,
        'Team connection secrets are created by operators for each team after deployment, so the step executor ' +
          `may read every secret named under ${connectionSecretPrefix} (and no other); a team's connection names ` +
          'its own secret, which the executor resolves only for that team.',
      );
      acknowledge(
        `AwsSolutions-IAM5[Resource::arn:<AWS::Partition>:ssm:<AWS::Region>:<AWS::AccountId>:parameter/${connectionSecretPrefix}*]`,
        'Team connection secrets may also be SSM SecureString parameters, created by operators for each team ' +
          `after deployment, so the step executor may read every parameter named under /${connectionSecretPrefix} ` +
          "(and no other); a team's connection names its own parameter, which the executor resolves only for that team.",
      );
    }
  }
}
