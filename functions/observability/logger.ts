import { Logger } from '@aws-lambda-powertools/logger';
import { logServiceName } from './log-line.ts';

/** One structured JSON logger per function; level from POWERTOOLS_LOG_LEVEL. Never log keys or secrets. */
export const logger = new Logger({ serviceName: logServiceName });
