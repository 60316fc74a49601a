/** The Usage panel's and the job view's goodput arithmetic (usage.ts). */
import {
  barLayout,
  failureText,
  formatGpuSeconds,
  formatHours,
  formatShare,
  goodputSegments,
  IGoodputParts,
  quotaBar,
  sessionGpuText
} from '../usage';

const parts = (over: Partial<IGoodputParts> = {}): IGoodputParts => ({
  goodput: 0.7,
  productive_s: 70,
  startup_s: 10,
  checkpoint_s: 5,
  redone_s: 15,
  interrupted_s: 0,
  ...over
});

describe('goodputSegments', () => {
  it('keeps the order, leaves zero parts out and sums to one', () => {
    const s = goodputSegments(parts());
    expect(s.map(x => x.key)).toEqual(['productive', 'startup', 'checkpoint', 'redone']);
    expect(s.map(x => x.share)).toEqual([0.7, 0.1, 0.05, 0.15]);
    expect(s.reduce((a, x) => a + x.share, 0)).toBeCloseTo(1);
    expect(s[3].label).toBe('redone steps');
  });

  it('draws nothing for a job without steps or without time', () => {
    expect(goodputSegments(parts({ goodput: null }))).toEqual([]);
    expect(
      goodputSegments(
        parts({ productive_s: 0, startup_s: 0, checkpoint_s: 0, redone_s: 0, interrupted_s: 0 })
      )
    ).toEqual([]);
  });

  it('ignores a negative part rather than shrinking the others', () => {
    const s = goodputSegments(parts({ interrupted_s: -3 }));
    expect(s.map(x => x.key)).not.toContain('interrupted');
    expect(s.reduce((a, x) => a + x.share, 0)).toBeCloseTo(1);
  });
});

describe('quotaBar', () => {
  it('shows used, borrowed and lendable against the nominal quota', () => {
    const b = quotaBar({
      pool: 'a100',
      resource: 'nvidia.com/gpu',
      used: 6,
      nominal: 8,
      borrowed: 0,
      lendable: 2
    });
    expect([b.used, b.borrowed, b.free]).toEqual([0.75, 0, 0.25]);
    expect(b.text).toBe('6 of 8 used · 2 lendable');
  });

  it('scales to what is in use when the team borrows beyond its quota', () => {
    const b = quotaBar({
      pool: 'h100',
      resource: 'nvidia.com/gpu',
      used: 10,
      nominal: 8,
      borrowed: 2,
      lendable: 0
    });
    expect(b.used).toBeCloseTo(0.8);
    expect(b.borrowed).toBeCloseTo(0.2);
    expect(b.free).toBe(0);
    expect(b.text).toBe('10 of 8 used · 2 borrowed · 0 lendable');
  });

  it('never draws more than the whole bar, and says an unknown quota', () => {
    const b = quotaBar({
      pool: 'x',
      resource: 'cpu',
      used: 0.5,
      nominal: null,
      borrowed: 0,
      lendable: null
    });
    expect(b.used + b.borrowed + b.free).toBeLessThanOrEqual(1);
    expect(b.text).toBe('0.50 of ? used');
  });
});

describe('barLayout', () => {
  it('scales to the largest value, bars side by side from the bottom', () => {
    const bars = barLayout(
      [
        { label: 'a', value: 1 },
        { label: 'b', value: 4 },
        { label: 'c', value: 0 }
      ],
      300,
      100
    );
    expect(bars.map(b => b.height)).toEqual([25, 100, 0]);
    expect(bars.map(b => b.y)).toEqual([75, 0, 100]);
    expect(bars[1].x).toBeGreaterThan(bars[0].x + bars[0].width);
    expect(bars[2].x + bars[2].width).toBeLessThanOrEqual(300);
  });

  it('keeps a quiet series low against a given maximum', () => {
    const [bar] = barLayout([{ label: 'a', value: 1 }], 10, 100, 10);
    expect(bar.height).toBe(10);
    expect(barLayout([], 10, 10)).toEqual([]);
  });
});

describe('formats', () => {
  it('says shares, hours and GPU time readably', () => {
    expect(formatShare(0.874)).toBe('87 %');
    expect(formatShare(0.004)).toBe('0.4 %');
    expect(formatShare(null)).toBe('–');
    expect(formatHours(0)).toBe('0 h');
    expect(formatHours(0.002)).toBe('0.0020 h');
    expect(formatHours(1.254)).toBe('1.25 h');
    expect(formatHours(312.4)).toBe('312 h');
    expect(formatGpuSeconds(12)).toBe('12 GPU-s');
    expect(formatGpuSeconds(600)).toBe('10.0 GPU-min');
    expect(formatGpuSeconds(7200)).toBe('2.0 GPU-h');
    expect(failureText({ failure_class: 'code', jobs: 1, rate: 0.25 })).toBe('code: 1 job (25 %)');
  });
});

describe('sessionGpuText', () => {
  const share = {
    share: '1/4',
    strategy: 'time-slicing',
    words: '¼ of a GPU (time-sliced with 3 others)',
    gpu_name: 'Tesla T4',
    memory_total_bytes: 16 * 2 ** 30,
    others_bytes: 9.1 * 2 ** 30,
    line: '¼ of a GPU (time-sliced with 3 others) · 9.1 GiB in use by others',
    reason: null
  };
  it("says the server's line, and why the memory is unknown when it is", () => {
    expect(sessionGpuText(share)).toBe(share.line);
    expect(
      sessionGpuText({
        ...share,
        others_bytes: null,
        line: share.words,
        reason: 'GPUs are hidden by TRAINHUB_GPUS=0.'
      })
    ).toBe(
      '¼ of a GPU (time-sliced with 3 others) (memory in use: GPUs are hidden by TRAINHUB_GPUS=0.)'
    );
    expect(sessionGpuText(null)).toBeNull();
    expect(sessionGpuText(undefined)).toBeNull();
  });
});
