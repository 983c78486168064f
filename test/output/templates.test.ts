// templates/: the shipped files load and validate; the loader rejects broken mappings; the text filler keeps
// values verbatim and refuses what it cannot fill.
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  engineFlags,
  evalConfig,
  evalFlags,
  fillTemplate,
  parseEngineFlags,
  templatePath,
  textTemplate,
} from '../../src/output/templates.js';
import { InferplanError } from '../../src/util/errors.js';

const shipped = readFileSync(templatePath('engine-flags.yaml'), 'utf8');

describe('templates/engine-flags.yaml', () => {
  it('loads for every backend, with the trtllm engine config', () => {
    const f = engineFlags();
    expect(Object.keys(f).sort()).toEqual(['sglang', 'trtllm', 'vllm']);
    expect(f.vllm.module).toBe('dynamo.vllm');
    expect(f.trtllm.engine_config?.map((e) => e.key)).toContain('kv_cache_config');
    expect(f.sglang.kv_cache_dtype.fp8).toBe('fp8_e4m3');
  });

  it('rejects unknown conditions, unknown value keys, two values for one flag and unknown dtypes, naming the key', () => {
    const broken = (from: string, to: string) => {
      expect(shipped).toContain(from);
      return () => parseEngineFlags(shipped.replace(from, to));
    };
    expect(broken('when: [expert_parallel]', 'when: [expert_paralel]')).toThrow(/engine-flags\.yaml: vllm\.args\.5\.when\.0: unknown condition/);
    expect(broken('{ flag: --max-num-seqs, value: batch_size }', '{ flag: --max-num-seqs, value: batch }')).toThrow(/vllm\.args\.6\.value: unknown value key/);
    expect(broken('{ flag: --pp-size, value: pp }', '{ flag: --pp-size, value: pp, text: "1" }')).toThrow(/at most one of value, text, shell/);
    expect(broken('kv_cache_dtype: { bfloat16: auto, float16: auto, fp8: fp8 }', 'kv_cache_dtype: { bf16: auto }')).toThrow(/unknown dtype/);
    expect(broken("text: '{\"publisher\":\"zmq\",\"topic\":\"kv-events\",\"endpoint\":\"tcp://*:{{kv_event_port}}\"}'", "text: '{{kv_port}}'")).toThrow(/unknown \{\{key\}\}/);
    expect(() => parseEngineFlags('vllm: [')).toThrow(InferplanError);
  });

  it('evaluates flags in file order under their conditions, and config values keep their type', () => {
    const f = parseEngineFlags(
      [
        'vllm: &b',
        '  module: m',
        '  kv_cache_dtype: {}',
        '  load_time_quantization: { from: [], to: {} }',
        '  args:',
        '    - { flag: --a, value: tp }',
        '    - { flag: --b, when: [prefill] }',
        "    - { flag: --c, when: ['!prefill'] }",
        "    - { flag: --d, text: 'x{{tp}}y' }",
        '  engine_config:',
        '    - { key: tp, value: tp }',
        "    - { key: chunked, value: '!decode' }",
        '    - { key: nested, when: [disagg], fields: [{ key: on, literal: true }] }',
        'sglang: *b',
        'trtllm: *b',
      ].join('\n'),
    );
    const vars = { tp: 4, prefill: false, decode: true, disagg: true };
    expect(evalFlags(f.vllm.args, vars)).toEqual([{ flag: '--a', value: '4' }, { flag: '--c' }, { flag: '--d', value: 'x4y' }]);
    expect(evalConfig(f.vllm.engine_config ?? [], vars)).toEqual({ tp: 4, chunked: false, nested: { on: true } });
    expect(() => evalFlags(f.vllm.args, { prefill: true })).toThrow(/"tp" has no value/);
  });
});

describe('text templates', () => {
  it('fills placeholders verbatim and keeps or drops sections', () => {
    const t = ['a {{x}}', '{{#on}}', 'kept {{x}}', '{{^off}}', 'nested', '{{/off}}', '{{/on}}', '{{^on}}', 'dropped', '{{/on}}', 'end', ''].join('\n');
    expect(fillTemplate(t, { x: "'{{on}}'", on: true, off: false }, 't')).toBe("a '{{on}}'\nkept '{{on}}'\nnested\nend\n");
    expect(fillTemplate(t, { x: '1', on: false, off: false }, 't')).toBe('a 1\ndropped\nend\n');
  });

  it('refuses unknown names, wrong kinds and unbalanced sections, naming the line', () => {
    expect(() => fillTemplate('a\n{{y}}\n', {}, 't')).toThrow(/templates\/t:2: \{\{y\}\} needs a string value/);
    expect(() => fillTemplate('{{#x}}\n', { x: 'yes' }, 't')).toThrow(/section x needs a boolean/);
    expect(() => fillTemplate('{{#x}}\na\n', { x: true }, 't')).toThrow(/never closed/);
    expect(() => fillTemplate('a\n{{/x}}\n', {}, 't')).toThrow(/closes no open section/);
    expect(() => fillTemplate('{{constructor}}\n', {}, 't')).toThrow(/needs a string value/);
  });

  it('every shipped template is described in templates/README.md and shipped with the package', () => {
    const readme = readFileSync(templatePath('README.md'), 'utf8');
    const files = readdirSync(templatePath()).filter((f) => f !== 'README.md');
    expect(files.length).toBeGreaterThan(0);
    for (const f of files) expect(readme, f).toContain(`\`${f}\``);
    for (const f of files.filter((x) => x.endsWith('.tmpl'))) expect(textTemplate(f).endsWith('\n'), f).toBe(true);
    const pkg = JSON.parse(readFileSync(templatePath('..', 'package.json'), 'utf8')) as { files: string[] };
    expect(pkg.files).toContain('templates');
  });
});
