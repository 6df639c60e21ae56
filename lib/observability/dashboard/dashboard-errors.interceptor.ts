import {
  BadRequestException,
  HttpException,
  Injectable,
  Logger,
  ServiceUnavailableException,
  type CallHandler,
  type ExecutionContext,
  type NestInterceptor,
} from '@nestjs/common';
import { catchError, type Observable } from 'rxjs';
import { InvalidJobError } from '../../core/errors/invalid-job.error.js';
import { InvalidLockKeyError } from '../../core/errors/invalid-lock-key.error.js';
import { InvalidOptionsError } from '../../core/errors/invalid-options.error.js';
import { InvalidTopicError } from '../../core/errors/invalid-topic.error.js';
import { RedisCommandError } from '../../core/errors/redis-command.error.js';
import { RedisConnectionError } from '../../core/errors/redis-connection.error.js';
import type { RedisLockError } from '../../core/errors/redis-lock.error.js';
import { errorMessage } from '../../core/errors/error-message.js';

/** What HTTP clients are told when Redis cannot serve the dashboard; the details go to the server's log. */
const REDIS_UNAVAILABLE = {
  REDIS_CONNECTION: 'The dashboard cannot reach its Redis server right now. Retry later.',
  REDIS_COMMAND: 'Redis refused a command of the dashboard. Retry later.',
} as const;

const logger = new Logger('RedisLockDashboard');
/** Monotonic ms of the last such log line: at most one a second while Redis is down. */
let lastLog = Number.NEGATIVE_INFINITY;

/**
 * Answers the library's typed errors with the HTTP status they mean: a bad topic or job id from the
 * URL is the caller's mistake (400, with the error's message, which names what was wrong in the
 * request), Redis being unreachable or refusing is 503 with a generic message (the error, which names
 * the Redis address, is logged); anything else keeps Nest's default handling. The body carries the
 * error's stable `code`.
 */
@Injectable()
export class DashboardErrorsInterceptor implements NestInterceptor {
  intercept(_context: ExecutionContext, next: CallHandler): Observable<unknown> {
    return next.handle().pipe(
      catchError((error: unknown) => {
        throw toHttpException(error);
      }),
    );
  }
}

function toHttpException(error: unknown): unknown {
  if (error instanceof HttpException) return error;
  const body = (status: number, label: string) => ({
    statusCode: status,
    error: label,
    code: (error as RedisLockError).code,
    message: errorMessage(error),
  });
  if (
    error instanceof InvalidTopicError ||
    error instanceof InvalidJobError ||
    error instanceof InvalidLockKeyError ||
    error instanceof InvalidOptionsError
  ) {
    return new BadRequestException(body(400, 'Bad Request'), { cause: error });
  }
  if (error instanceof RedisConnectionError || error instanceof RedisCommandError) {
    if (performance.now() - lastLog >= 1_000) {
      lastLog = performance.now();
      logger.warn(`Dashboard request failed: ${errorMessage(error)}`);
    }
    return new ServiceUnavailableException(
      { statusCode: 503, error: 'Service Unavailable', code: error.code, message: REDIS_UNAVAILABLE[error.code] },
      { cause: error },
    );
  }
  return error;
}
