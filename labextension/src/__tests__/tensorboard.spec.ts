import { tensorBoardIds, tensorBoardTitle, TENSORBOARD_MOST } from '../tensorboard';

describe('Open in TensorBoard', () => {
  it('takes 1 to 10 jobs, each once, in order', () => {
    expect(tensorBoardIds({ ids: ['b', 'a', 'b'] })).toEqual(['b', 'a']);
    expect(() => tensorBoardIds({ ids: [] })).toThrow('1 to 10 jobs');
    expect(() => tensorBoardIds({})).toThrow('got 0');
    const many = Array.from({ length: TENSORBOARD_MOST + 1 }, (_, i) => `j${i}`);
    expect(() => tensorBoardIds({ ids: many })).toThrow('got 11');
  });

  it('names its tab by the job, or by how many', () => {
    expect(tensorBoardTitle(['mnist-1a2b'])).toBe('TensorBoard: mnist-1a2b');
    expect(tensorBoardTitle(['a', 'b', 'c'])).toBe('TensorBoard: 3 jobs');
  });
});
