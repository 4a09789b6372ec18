import { Logger } from '@aws-lambda-powertools/logger';

/** One structured JSON logger per function; level from POWERTOOLS_LOG_LEVEL. Never log keys or secrets. */
export const logger = new Logger({ serviceName: 'workflow-run-api' });
