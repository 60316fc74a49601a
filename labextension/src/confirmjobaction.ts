/**
 * A job action that loses something (Cancel, Suspend), the one way every view asks for it:
 * JupyterLab's dialog names the job and what is lost, "Keep running" is its default, and only
 * once the person confirms does the request go out. cancel.ts and suspend.ts say the words.
 */
import { Dialog, showDialog } from '@jupyterlab/apputils';

export interface IJobActionDialog<T> {
  /** The dialog's title and its warn button, e.g. `Cancel job`. */
  action: string;
  /** What the dialog says about the job. */
  question: string;
  /** Runs as soon as the person confirms (to show `cancelling…` before the server answers). */
  onConfirmed?: () => void;
  /** The request, sent once confirmed. */
  request: () => Promise<T>;
}

/** JupyterLab's dialog: true when the person confirmed `action`; `keep` labels the default
 * button that changes nothing (a schedule is kept, not kept running). */
export async function confirmJobAction(
  action: string,
  question: string,
  keep = 'Keep running'
): Promise<boolean> {
  const answer = await showDialog({
    title: action,
    body: question,
    buttons: [Dialog.cancelButton({ label: keep }), Dialog.warnButton({ label: action })],
    defaultButton: 0
  });
  return answer.button.accept;
}

/**
 * Ask, then send the request. Resolves to what the request answered, or null when the person
 * kept the job running; errors of the request are thrown to the caller.
 */
export async function withConfirmation<T>(dialog: IJobActionDialog<T>): Promise<T | null> {
  if (!(await confirmJobAction(dialog.action, dialog.question))) {
    return null;
  }
  dialog.onConfirmed?.();
  return dialog.request();
}
