import { isValidName, slugName, successorName } from '../naming';

describe('slugName (the server rule of trainhub/jobs/naming.py)', () => {
  it('turns a natural name into a valid one', () => {
    expect(slugName('sweep-lr-0.001')).toBe('sweep-lr-0-001');
    expect(slugName('  My Run (v2)!  ')).toBe('my-run-v2');
    expect(slugName('ÜBER_run__3')).toBe('ber-run-3');
    expect(slugName('...')).toBe('job');
  });

  it('keeps what is valid and cuts at 40 characters without a trailing dash', () => {
    expect(slugName('resnet-50')).toBe('resnet-50');
    const long = slugName(`${'a'.repeat(39)}-b`);
    expect(long).toBe('a'.repeat(39));
    expect(isValidName(long)).toBe(true);
  });

  it('says which names the server takes as they are', () => {
    expect(isValidName('sweep-lr-0-001')).toBe(true);
    expect(isValidName('sweep-lr-0.001')).toBe(false);
    expect(isValidName('-x')).toBe(false);
    expect(isValidName('x'.repeat(41))).toBe(false);
  });
});

describe('successorName', () => {
  it('numbers a job run again from 2, then the next free number', () => {
    expect(successorName('train', [])).toBe('train-2');
    expect(successorName('train', ['train', 'train-2', 'train-5', 'other-9'])).toBe('train-6');
  });

  it('counts on from a job that was itself run again', () => {
    expect(successorName('train-2', ['train', 'train-2'], true)).toBe('train-3');
    // a name that merely ends in digits is not taken apart
    expect(successorName('resnet-50', ['resnet-50'])).toBe('resnet-50-2');
  });

  it('stays within 40 characters', () => {
    const name = successorName('x'.repeat(40), []);
    expect(name).toHaveLength(40);
    expect(name.endsWith('-2')).toBe(true);
  });
});
