import { parameterError, parameterErrors, parameterKind, parameterValueFor } from '../parameters';

describe('parameterKind (the type of the default, from its source text)', () => {
  it.each([
    ['0.001', 'float'],
    ['1e-3', 'float'],
    ['10', 'int'],
    ['True', 'bool'],
    ["'adam'", 'str'],
    ['None', 'none'],
    ['[1, 2]', 'list'],
    ['(3, 4)', 'list'],
    ["{'a': 1}", 'dict'],
    ['1 / 3', 'other'],
    ['np.float32(0.1)', 'other']
  ])('%s is %s', (text, kind) => {
    expect(parameterKind(text)).toBe(kind);
  });
});

describe('parameterError', () => {
  it('refuses a typo in a float, naming the default', () => {
    expect(parameterError('0.001', '0.0O1')).toBe(
      "“0.0O1” is not a number, as the notebook's default 0.001 is."
    );
    expect(parameterError('0.001', '')).toMatch(/^an empty value is not a number/);
    expect(parameterError('0.001', '3e-4')).toBeNull();
    expect(parameterError('0.001', '3')).toBeNull(); // an int is a float's value
  });

  it('wants whole numbers for an int, True/False for a bool, a list for a list', () => {
    expect(parameterError('10', '2.5')).toMatch(/not a whole number/);
    expect(parameterError('10', '1e3')).toMatch(/not a whole number/);
    expect(parameterError('10', '1_000')).toBeNull();
    expect(parameterError('True', 'yes')).toMatch(/not True or False/);
    expect(parameterError('[1, 2]', '3')).toMatch(/not a list/);
    expect(parameterError('[1, 2]', '(3, 4)')).toBeNull();
    expect(parameterError("{'a': 1}", '[1]')).toMatch(/not a dict/);
  });

  it('checks nothing for text, None and expressions', () => {
    expect(parameterError("'adam'", 'sgd')).toBeNull();
    expect(parameterError('None', 'whatever')).toBeNull();
    expect(parameterError('1 / 3', 'x')).toBeNull();
  });

  it('gathers the errors of a form by parameter', () => {
    const params = [
      { name: 'lr', text: '0.05' },
      { name: 'epochs', text: '4' },
      { name: 'opt', text: "'adam'" }
    ];
    expect(parameterErrors(params, { lr: '0.o5', epochs: '4', opt: '3' })).toEqual({
      lr: "“0.o5” is not a number, as the notebook's default 0.05 is."
    });
  });
});

describe('parameterValueFor', () => {
  it('keeps text typed for a text parameter as text', () => {
    expect(parameterValueFor("'adam'", '5')).toBe('5');
    expect(parameterValueFor("'adam'", "'sgd'")).toBe('sgd');
    expect(parameterValueFor("'adam'", 'sgd')).toBe('sgd');
  });

  it('sends numbers, booleans and lists as values', () => {
    expect(parameterValueFor('0.05', '3e-4')).toBe(0.0003);
    expect(parameterValueFor('True', 'False')).toBe(false);
    expect(parameterValueFor('(3, 4)', '[5, 6]')).toEqual([5, 6]);
  });
});
