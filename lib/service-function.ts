import path from 'node:path';
import { Duration, RemovalPolicy, Stack, Validations } from 'aws-cdk-lib';
import { type ISecurityGroup, type IVpc, SubnetType } from 'aws-cdk-lib/aws-ec2';
import { PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Architecture, RecursiveLoop, Runtime, Tracing } from 'aws-cdk-lib/aws-lambda';
import { NodejsFunction, OutputFormat } from 'aws-cdk-lib/aws-lambda-nodejs';
import { LogGroup } from 'aws-cdk-lib/aws-logs';
import { Construct } from 'constructs';
import { functionMemoryMb } from '../platform/definitions.ts';
import { functionLogGroupName } from '../platform/log-queries.ts';
import { besideFileCopies, bundlingOptions } from './bundling.ts';

/** The repository root: every `entry` in the route and worker tables is relative to it. */
export const repoRoot = path.resolve(import.meta.dirname, '..');

/**
 * What Lambda sends with a function's role to attach it to its subnets and remove it
 * (AWSLambdaVPCAccessExecutionRole's actions); never the function's code.
 */
export const networkInterfaceActions = [
  'ec2:CreateNetworkInterface',
  'ec2:DescribeNetworkInterfaces',
  'ec2:DescribeSubnets',
  'ec2:DeleteNetworkInterface',
  'ec2:AssignPrivateIpAddresses',
  'ec2:UnassignPrivateIpAddresses',
] as const;

export interface ServiceFunctionProps {
  /** Handler module relative to the repository root; it exports `handler`. */
  entry: string;
  /** Seconds the function may run. */
  timeoutSeconds: number;
  /** Resource names and URLs the handler reads at cold start. */
  environment: Record<string, string>;
  /** Shown in the Lambda console, e.g. the route key. */
  description: string;
  /** Days its log group keeps events (the stage's `logRetentionDays`). */
  logRetentionDays: number;
  /**
   * Keep the log group when the stack is deleted or the group replaced (prod), except when the
   * stack's creation rolls back, so a failed first deploy can be retried under the same fixed
   * names; or delete it with the function (dev).
   */
  keepLogs: boolean;
  /**
   * Concurrency reserved for, and the most allowed to, this function. Default: none (the account's
   * unreserved pool).
   */
  reservedConcurrentExecutions?: number;
  /**
   * Active X-Ray tracing. Default: false; on where the stage traces (`-c tracing=true`,
   * `StageConfig.tracing`), except for a function that runs on a timer whether or not there is
   * work, where a trace per tick would be most of its idle cost and its log line says it all.
   */
  tracing?: boolean;
  /** Megabytes of memory (and, in proportion, CPU). Default: `functionMemoryMb`. */
  memoryMb?: number;
  /** Put the function in these subnets behind this group (`IsolatedNetwork`). Default: no VPC. */
  network?: { vpc: IVpc; securityGroup: ISecurityGroup };
  /**
   * The function feeds its own queue (a step's next step, a job's next poll, a webhook's next
   * try): Lambda's recursive loop detection would drop its messages after 16 hops along one trace.
   * The application bounds its own loops instead (docs/operations.md). Default: false (Terminate).
   */
  feedsItsOwnQueue?: boolean;
}

/**
 * One Lambda function of the service, built the same way for every route and worker: Node 24 on
 * ARM, a minified ESM bundle built with `bundlingOptions` (the AWS SDK v3 bundled with the code),
 * source maps, X-Ray tracing when asked, its own log group kept for the stage's log retention, and its own
 * role, which starts with nothing but writing to that log group.
 */
export class ServiceFunction extends Construct {
  readonly fn: NodejsFunction;
  /** The function's role: `Grants` adds exactly what its route or worker entry lists. */
  readonly role: Role;

  constructor(scope: Construct, id: string, props: ServiceFunctionProps) {
    super(scope, id);
    const tracing = props.tracing ?? false;

    const logGroup = new LogGroup(this, 'Logs', {
      // Named, so an operator's query (`npm run admin -- run show`) knows the stage's groups offline.
      logGroupName: functionLogGroupName(Stack.of(this).stackName, id),
      retention: props.logRetentionDays,
      removalPolicy: props.keepLogs ? RemovalPolicy.RETAIN_ON_UPDATE_OR_DELETE : RemovalPolicy.DESTROY,
    });
    // Its own role, allowed to write to its own log group only: not AWSLambdaBasicExecutionRole,
    // which may create any log group and write to every one in the account.
    const role = new Role(this, 'Role', { assumedBy: new ServicePrincipal('lambda.amazonaws.com') });
    logGroup.grantWrite(role);
    this.role = role;

    // Data files the function reads at run time (`lib/bundling.ts`), copied beside its bundle.
    const copies = besideFileCopies(props.entry);
    const commandHooks = {
      beforeBundling: () => [],
      beforeInstall: () => [],
      afterBundling: (inputDir: string, outputDir: string) =>
        copies.flatMap(({ from, to }) => [
          `mkdir -p "${path.posix.dirname(`${outputDir}/${to}`)}"`,
          `cp "${inputDir}/${from}" "${outputDir}/${to}"`,
        ]),
    };

    this.fn = new NodejsFunction(this, 'Function', {
      entry: path.join(repoRoot, props.entry),
      handler: 'handler',
      projectRoot: repoRoot,
      depsLockFilePath: path.join(repoRoot, 'package-lock.json'),
      description: props.description,
      runtime: Runtime.NODEJS_24_X,
      architecture: Architecture.ARM_64,
      memorySize: props.memoryMb ?? functionMemoryMb,
      timeout: Duration.seconds(props.timeoutSeconds),
      tracing: tracing ? Tracing.ACTIVE : Tracing.DISABLED,
      logGroup,
      role,
      reservedConcurrentExecutions: props.reservedConcurrentExecutions,
      recursiveLoop: props.feedsItsOwnQueue ? RecursiveLoop.ALLOW : RecursiveLoop.TERMINATE,
      // Versions exist only behind an alias (lib/safe-deploys.ts): the previous one is deleted when the
      // update that replaced it (and its CodeDeploy deployment) is done, so they do not pile up.
      currentVersionOptions: { removalPolicy: RemovalPolicy.DESTROY },
      ...(props.network
        ? {
            vpc: props.network.vpc,
            vpcSubnets: { subnetType: SubnetType.PRIVATE_ISOLATED },
            securityGroups: [props.network.securityGroup],
          }
        : {}),
      environment: { ...props.environment, NODE_OPTIONS: '--enable-source-maps' },
      // NodejsFunction always bundles for platform node, the only platform `bundlingOptions` allows.
      bundling: {
        format: OutputFormat.ESM,
        minify: bundlingOptions.minify,
        sourceMap: bundlingOptions.sourceMap,
        sourcesContent: bundlingOptions.sourcesContent,
        target: bundlingOptions.target,
        mainFields: [...bundlingOptions.mainFields],
        banner: bundlingOptions.banner,
        externalModules: [...bundlingOptions.externalModules],
        ...(copies.length > 0 ? { commandHooks } : {}),
      },
    });

    if (props.network) {
      // The one grant beyond its logs: Lambda creates and removes the function's network interfaces
      // in its subnets with the function's role (what AWSLambdaVPCAccessExecutionRole holds). The
      // code cannot use them: it has no route to EC2's API, nor to anything else.
      role.addToPolicy(
        new PolicyStatement({
          actions: [...networkInterfaceActions],
          resources: ['*'],
        }),
      );
      Validations.of(this).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          "Lambda manages a VPC function's network interfaces with its role; EC2 documents " +
          'CreateNetworkInterface and DescribeNetworkInterfaces as allowed on all resources only.',
      });
    }

    if (tracing) {
      Validations.of(this).acknowledge({
        id: 'AwsSolutions-IAM5[Resource::*]',
        reason:
          'Active X-Ray tracing needs xray:PutTraceSegments and xray:PutTelemetryRecords, ' +
          'which support no resource-level permissions.',
      });
    }
  }
}
