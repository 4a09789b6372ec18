import { Validations } from 'aws-cdk-lib';
import { type ISecurityGroup, type IVpc, SecurityGroup, SubnetType, Vpc } from 'aws-cdk-lib/aws-ec2';
import { Construct } from 'constructs';

/**
 * A network with no way out, for the function that runs tenants' code (the PythonRunner): a VPC of
 * isolated subnets only (no internet gateway, no NAT, no endpoint, so no route leaves it) and a
 * security group with no ingress and no egress rule (not even DNS). Code that escaped every wall
 * reaches no address: not the internet, not AWS's APIs, not the stage's table or bucket.
 *
 * The availability zones are the ones named (`-c pythonRunnerAzs`, checked at synth in
 * lib/stages.ts), else the region's first two through `Fn::GetAZs` in an environment-agnostic
 * stack, so `cdk synth` looks nothing up and needs no credentials. Free: a VPC, subnets and security
 * groups cost nothing; Lambda's network interfaces in them neither.
 */
export class IsolatedNetwork extends Construct {
  readonly vpc: IVpc;
  readonly securityGroup: ISecurityGroup;

  constructor(scope: Construct, id: string, props: { availabilityZones?: readonly string[] | undefined } = {}) {
    super(scope, id);
    this.vpc = new Vpc(this, 'Vpc', {
      ...(props.availabilityZones ? { availabilityZones: [...props.availabilityZones] } : { maxAzs: 2 }),
      natGateways: 0,
      subnetConfiguration: [{ name: 'Isolated', subnetType: SubnetType.PRIVATE_ISOLATED, cidrMask: 24 }],
    });
    // CDK gives a group without egress one rule no packet matches, so CloudFormation adds no allow-all.
    this.securityGroup = new SecurityGroup(this, 'SecurityGroup', {
      vpc: this.vpc,
      allowAllOutbound: false,
      description: 'No ingress, no egress: the PythonRunner reaches nothing',
    });
    Validations.of(this.vpc).acknowledge({
      id: 'AwsSolutions-VPC7',
      reason:
        'No traffic can leave or enter this VPC (isolated subnets, no gateway, a security group without rules): ' +
        'flow logs would record only refused attempts, at CloudWatch Logs prices per run.',
    });
  }
}
