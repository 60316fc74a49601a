/**
 * "Run again…" of a pipeline run (one's own, or a teammate's shared with the team): its
 * parameters, prefilled and editable as the submit dialog's are (Python literals), and whether
 * unchanged steps may reuse earlier results. The new run is the person's own.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';

import { parameterValueFor, pythonLiteral } from '../parameters';
import { IDescribeRun } from '../pipelineruns';

export interface IRunAgain {
  parameters: Record<string, unknown>;
  cache: boolean;
}

class RunAgainBody extends Widget implements Dialog.IBodyWidget<IRunAgain> {
  private readonly inputs = new Map<string, { input: HTMLInputElement; was: string }>();
  private readonly cache: HTMLInputElement;

  constructor(run: IDescribeRun) {
    super();
    this.addClass('jp-trainhub-run-again-body');
    const intro = document.createElement('p');
    intro.textContent =
      `A new run of your own, in your quota, of ${run.user}'s pipeline: its code as the ` +
      'run froze it while that is kept, else your workspace’s.';
    this.node.appendChild(intro);
    for (const [name, value] of Object.entries(run.parameters)) {
      const label = document.createElement('label');
      label.textContent = name;
      const input = document.createElement('input');
      input.className = 'jp-mod-styled jp-trainhub-mono';
      input.name = name;
      input.value = pythonLiteral(value);
      label.appendChild(input);
      this.node.appendChild(label);
      this.inputs.set(name, { input, was: input.value });
    }
    const cacheLabel = document.createElement('label');
    this.cache = document.createElement('input');
    this.cache.type = 'checkbox';
    this.cache.name = 'cache';
    this.cache.checked = run.cache;
    cacheLabel.append(this.cache, ' Reuse the results of unchanged steps');
    this.node.appendChild(cacheLabel);
  }

  /** Only what the person changed: the rest stands as the run had it. */
  getValue(): IRunAgain {
    const parameters: Record<string, unknown> = {};
    for (const [name, { input, was }] of this.inputs) {
      if (input.value.trim() !== was) {
        parameters[name] = parameterValueFor(was, input.value);
      }
    }
    return { parameters, cache: this.cache.checked };
  }
}

/** Ask for the parameters of a run again of `run`; null when the person cancels. */
export async function showRunAgainDialog(run: IDescribeRun): Promise<IRunAgain | null> {
  const result = await showDialog({
    title: `Run ${run.name} again`,
    body: new RunAgainBody(run),
    buttons: [Dialog.cancelButton(), Dialog.okButton({ label: 'Start run' })],
    focusNodeSelector: 'input'
  });
  return result.button.accept ? result.value : null;
}
