import { describe, expect, it } from 'vitest';
import { type BuildRun, compareRuns, comparisonTable } from '../bench/compare.js';
import type { Figure } from '../bench/context.js';
import { parseOptions, scenarioNames } from '../bench/options.js';

/** `npm run bench -- --against REV`: how the runs of two builds are set side by side, and the options it takes. */

const rps = (value: number): Figure => ({ key: 'post.airs.rps', label: 'POST airs: req/s', value, better: 'higher' });
const cpu = (value: number): Figure => ({
  key: 'post.airs.cpuUs',
  label: 'POST airs: CPU µs/req',
  value,
  better: 'lower',
});
const run = (build: 'A' | 'B', round: number, ...figures: Figure[]): BuildRun => ({ build, round, figures });

describe('the comparison of two builds', () => {
  const runs = [
    run('A', 1, rps(3000), cpu(300)),
    run('B', 1, rps(2000), cpu(330)),
    run('A', 2, rps(3200), cpu(310)),
    run('B', 2, rps(2100), cpu(300)),
    run('A', 3, rps(3100), cpu(290)),
    run('B', 3, rps(2050), cpu(320)),
  ];

  it('gives each build its runs in order, the ratio of the medians, the ratios run by run and each spread', () => {
    const [rate] = compareRuns(runs);
    expect(rate).toMatchObject({
      key: 'post.airs.rps',
      a: [3000, 3200, 3100],
      b: [2000, 2100, 2050],
      aMedian: 3100,
      bMedian: 2050,
      ratio: 1.512,
      pairRatios: [1.5, 1.524],
      aSpreadPct: 6.5,
      bSpreadPct: 4.9,
    });
  });

  it('says which build is better only when every run of one beats every run of the other, in the figure’s direction', () => {
    const [rate, cost] = compareRuns(runs);
    expect(rate?.verdict).toBe('A better');
    // CPU per request: A 290-310, B 300-330: the ranges overlap, the noise cannot tell them apart.
    expect(cost?.verdict).toBe('overlap');
    const [worse] = compareRuns([
      run('A', 1, cpu(400)),
      run('B', 1, cpu(300)),
      run('A', 2, cpu(410)),
      run('B', 2, cpu(310)),
    ]);
    expect(worse?.verdict).toBe('A worse');
  });

  it('leaves out a run that lacks a figure instead of counting it as zero', () => {
    const [rate] = compareRuns([run('A', 1, rps(3000)), run('B', 1, rps(2000)), run('A', 2), run('B', 2, rps(2200))]);
    expect(rate?.a).toEqual([3000, Number.NaN]);
    expect(rate?.aMedian).toBe(3000);
    expect(rate?.bMedian).toBe(2100);
    expect(comparisonTable(compareRuns(runs))).toContain('| POST airs: req/s');
  });
});

describe('the options of --against', () => {
  it('takes the revision after a space or an equals sign, two runs of each build by default, and the hot path', () => {
    for (const argv of [['--against', 'HEAD~2'], ['--against=HEAD~2']]) {
      const options = parseOptions(argv);
      expect(options).toMatchObject({ against: 'HEAD~2', rounds: 2, only: ['post', 'get', 'e2e'] });
    }
    expect(parseOptions(['--against', 'main', '--rounds=3', '--only=webhooks'])).toMatchObject({
      against: 'main',
      rounds: 3,
      only: ['webhooks'],
    });
  });

  it('refuses one run per build, a missing revision and the scenarios it cannot compare', () => {
    expect(parseOptions(['--against', 'main', '--rounds=1'])).toMatch(/^--rounds: expected an integer from 2/);
    expect(parseOptions(['--against'])).toMatch(/^--against: expected a git revision/);
    expect(parseOptions(['--against', '--smoke'])).toMatch(/^--against: expected a git revision/);
    expect(parseOptions(['--against', 'main', '--only=post,storage'])).toMatch(
      /^--against measures post, get, e2e, webhooks only \(not storage\)/,
    );
    expect(parseOptions(['--airs-root=/tmp/x', '--only=cores'])).toMatch(/^--airs-root measures .* \(not cores\)/);
  });

  it('keeps every scenario, one build and the usual results file without --against', () => {
    const options = parseOptions(['--smoke']);
    expect(options).toMatchObject({ smoke: true, rounds: 2 });
    expect(typeof options === 'object' && options.only.length).toBe(scenarioNames.length);
    expect(typeof options === 'object' && options.against).toBeUndefined();
  });
});
