/**
 * A pipeline's mistakes as the editor shows them: what it finds without the server
 * (`localChecks`), merged with the server's answer and put on their steps. Pure.
 */
import { IFieldError } from './models';
import { PipelineDocument } from './pipelinedocument';
import { inputSource, MAX_STEP_NAME, STEP_NAME } from './pipelinegraph';

/**
 * What the editor can tell without the server, each mistake by step and field as the server
 * names them: a step without a notebook, depends_on or an input naming no step, an input
 * naming an output its step does not declare, a cycle.
 */
export function localChecks(pipeline: PipelineDocument): IFieldError[] {
  if (!pipeline.ok) {
    return pipeline.syntaxErrors;
  }
  const steps = pipeline.steps();
  if (!steps.length) {
    return [{ field: 'steps', message: 'a pipeline has at least one step' }];
  }
  const byName = new Map(steps.map(s => [s.name, s]));
  const errors: IFieldError[] = [];
  for (const s of steps) {
    const at = `steps.${s.name}`;
    if (!STEP_NAME.test(s.name) || s.name.length > MAX_STEP_NAME) {
      errors.push({
        field: at,
        message: `a step's name is lowercase letters, digits and dashes, at most ${MAX_STEP_NAME}`
      });
    }
    if (!s.notebook) {
      errors.push({ field: `${at}.notebook`, message: 'Field required' });
    } else if (!s.notebook.endsWith('.ipynb')) {
      errors.push({
        field: `${at}.notebook`,
        message: `'${s.notebook}' is not a notebook (.ipynb)`
      });
    }
    s.dependsOn.forEach((d, i) => {
      if (d === s.name) {
        errors.push({ field: `${at}.depends_on.${i}`, message: 'a step cannot depend on itself' });
      } else if (!byName.has(d)) {
        errors.push({ field: `${at}.depends_on.${i}`, message: `no step '${d}'` });
      }
    });
    for (const [input, ref] of Object.entries(s.inputs)) {
      const src = inputSource(ref);
      const field = `${at}.inputs.${input}`;
      if (!src) {
        errors.push({ field, message: `'${ref}' is not '<step>.<output>'` });
      } else if (src[0] === s.name) {
        errors.push({ field, message: 'a step cannot take its own output' });
      } else if (!byName.has(src[0])) {
        errors.push({ field, message: `no step '${src[0]}'` });
      } else if (!byName.get(src[0])!.outputs.includes(src[1])) {
        const declared = byName.get(src[0])!.outputs;
        const has = declared.length
          ? `it declares ${declared.join(', ')}`
          : 'it declares no outputs';
        errors.push({ field, message: `step '${src[0]}' has no output '${src[1]}'; ${has}` });
      }
    }
  }
  for (const s of steps) {
    if (!s.dependsOn.includes(s.name) && pipeline.dependsOn(s.name, s.name)) {
      errors.push({ field: `steps.${s.name}.depends_on`, message: 'is part of a cycle' });
    }
  }
  return errors;
}

/** The step a field error is about (`steps.train.inputs.data` -> train), or null. */
export function stepOfError(field: string, names: string[]): string | null {
  if (!field.startsWith('steps.')) {
    return null;
  }
  const rest = field.slice('steps.'.length);
  // Step names have no dots, so the first segment is the step.
  const name = rest.split('.')[0];
  return names.includes(name) ? name : null;
}

/** Errors by step (those of no step under ''), the step's prefix taken off each field. */
export function errorsByStep(
  errors: IFieldError[],
  names: string[]
): Record<string, IFieldError[]> {
  const out: Record<string, IFieldError[]> = {};
  for (const e of errors) {
    const step = stepOfError(e.field, names);
    const key = step ?? '';
    const field = step ? e.field.slice(`steps.${step}.`.length) || 'step' : e.field;
    (out[key] ??= []).push({ field, message: e.message });
  }
  return out;
}

/**
 * The editor's own findings and the server's last answer in one list: where the server named
 * a field, its sentence stands for the editor's on that field (the same mistake said once).
 */
export function mergeErrors(local: IFieldError[], server: IFieldError[]): IFieldError[] {
  const named = new Set(server.map(e => e.field));
  return [...local.filter(e => !named.has(e.field)), ...server];
}
