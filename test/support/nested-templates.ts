import { NestedStack, type Stack } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';

/** The templates of the stack's nested stacks (each one of its own in CloudFormation, with its own 500 resources). */
export const nestedTemplates = (stack: Stack): Template[] =>
  stack.node
    .findAll()
    .filter((construct) => NestedStack.isNestedStack(construct))
    .map((nested) => Template.fromStack(nested as NestedStack));

/**
 * A nested stack's parameters as the parent passes them: parameter name to the value given (a
 * `Ref` of a parent resource, mostly), so a test can follow a nested resource's reference home.
 */
export const nestedParameters = (parent: Template): Record<string, unknown> =>
  Object.assign(
    {},
    ...Object.values(parent.findResources('AWS::CloudFormation::Stack')).map(
      (r) => (r.Properties?.Parameters ?? {}) as Record<string, unknown>,
    ),
  );
