import {
  BadRequestException,
  HttpException,
  Injectable,
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

/**
 * Answers the library's typed errors with the HTTP status they mean: a bad topic or job id from the
 * URL is the caller's mistake (400), Redis being unreachable or refusing is 503; anything else
 * keeps Nest's default handling. The body carries the error's stable `code` and its message.
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

export function toHttpException(error: unknown): unknown {
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
    return new ServiceUnavailableException(body(503, 'Service Unavailable'), { cause: error });
  }
  return error;
}
