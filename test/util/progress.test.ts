import { describe, expect, it } from 'vitest';
import { eraseProgressLine, progress } from '../../src/util/progress.js';

function fakeTerminal(isTTY = true) {
  const out: string[] = [];
  return { out, stream: { isTTY, write: (s: string) => (out.push(s), true) } };
}

describe('progress on stderr', () => {
  it('appears after a second, redraws at most ten times a second, and is erased at the end', () => {
    const { out, stream } = fakeTerminal();
    let t = 0;
    const p = progress('rows', 100, { stream, env: {}, now: () => t });
    p.tick(10); // at 0 ms: too early
    t = 1500;
    p.tick(40);
    t = 1550;
    p.tick(41); // within 100 ms of the last redraw
    t = 1700;
    p.tick(70);
    p.end();
    expect(out).toEqual(['\r\x1b[Krows: 40/100 (40%)', '\r\x1b[Krows: 70/100 (70%)', '\r\x1b[K']);
  });
  it.each([
    ['not a terminal', { isTTY: false }, {}, false],
    ['--json', { isTTY: true }, {}, true],
    ['CI', { isTTY: true }, { CI: 'true' }, false],
  ] as const)('stays silent when %s', (_what, tty, env, json) => {
    const { out, stream } = fakeTerminal(tty.isTTY);
    let t = 0;
    const p = progress('rows', 10, { stream, env, json, now: () => t });
    t = 5000;
    p.tick(5);
    p.end();
    expect(out).toEqual([]);
  });
  it('a short task draws nothing and erases nothing', () => {
    const { out, stream } = fakeTerminal();
    const p = progress('rows', 10, { stream, env: {}, now: () => 10 });
    p.tick(10);
    p.end();
    expect(out).toEqual([]);
  });
});

describe('a log line during progress', () => {
  it('erases the drawn line first, once', () => {
    const { out, stream } = fakeTerminal();
    let t = 0;
    const p = progress('rows', 10, { stream, env: {}, now: () => t });
    t = 2000;
    p.tick(1);
    eraseProgressLine();
    eraseProgressLine();
    t = 2050;
    p.tick(2); // within 100 ms of the last draw
    p.end();
    expect(out).toEqual(['\r\x1b[Krows: 1/10 (10%)', '\r\x1b[K']);
  });
});
