// Errors that carry the documented exit code. The CLI prints `message` on one line and exits with `exitCode`.
export const ExitCode = {
  ok: 0,
  internal: 1,
  badInput: 2,
  noneMeetsSla: 3,
  unsupported: 4,
} as const;
export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode];

export class InferplanError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCodeValue,
    /** Optional machine-readable detail, carried into --json output. */
    readonly detail?: unknown,
  ) {
    super(message);
    this.name = 'InferplanError';
  }
}

/** Bad input or usage (exit 2). */
export class InputError extends InferplanError {
  constructor(message: string, detail?: unknown) {
    super(message, ExitCode.badInput, detail);
    this.name = 'InputError';
  }
}

/** Unsupported combination of system, backend, version or architecture (exit 4). */
export class UnsupportedError extends InferplanError {
  constructor(message: string, detail?: unknown) {
    super(message, ExitCode.unsupported, detail);
    this.name = 'UnsupportedError';
  }
}

/** Nothing meets the SLA (exit 3); `detail` holds the explanation. */
export class NoFeasibleError extends InferplanError {
  constructor(message: string, detail?: unknown) {
    super(message, ExitCode.noneMeetsSla, detail);
    this.name = 'NoFeasibleError';
  }
}
