// Progress on stderr for work longer than about a second, when a person is watching: stderr is a terminal,
// not --json, not CI. Redrawn in place at most ten times a second and erased when the work ends, so
// nothing of it stays in the output or reaches files and pipes.

export interface Progress {
  /** `done` of the total units are finished. */
  tick(done: number): void;
  /** The work ended (also on failure): erase the line if one was drawn. */
  end(): void;
}

export interface ProgressOptions {
  json?: boolean;
  stream?: Pick<NodeJS.WriteStream, 'write'> & { isTTY?: boolean };
  env?: NodeJS.ProcessEnv;
  now?: () => number;
}

const SHOW_AFTER_MS = 1000;
const REDRAW_MS = 100;

/** The line drawn last, if still on screen: logs and errors erase it first so they start on a clean line. */
let onScreen: { stream: Pick<NodeJS.WriteStream, 'write'> } | undefined;

export function eraseProgressLine(): void {
  if (onScreen) onScreen.stream.write('\r\x1b[K');
  onScreen = undefined;
}

export function progress(label: string, total: number, opts: ProgressOptions = {}): Progress {
  const stream = opts.stream ?? process.stderr;
  const env = opts.env ?? process.env;
  const now = opts.now ?? (() => performance.now());
  if (!stream.isTTY || opts.json || (env.CI !== undefined && env.CI !== '' && env.CI !== 'false')) return { tick: () => {}, end: () => {} };
  const started = now();
  let drawnAt = -Infinity;
  return {
    tick(done) {
      const t = now();
      if (t - started < SHOW_AFTER_MS || t - drawnAt < REDRAW_MS) return;
      drawnAt = t;
      onScreen = { stream };
      const pct = total > 0 ? Math.floor((100 * done) / total) : 0;
      stream.write(`\r\x1b[K${label}: ${done}/${total} (${pct}%)`);
    },
    end: eraseProgressLine,
  };
}
