/** The frame of this extension's form dialogs (submit, schedule) and their footer's buttons. */
import { ReactWidget } from '@jupyterlab/apputils';
import { Widget } from '@lumino/widgets';
import * as React from 'react';

/**
 * A modal over the whole lab holding a form of this extension (the submit dialog's frame);
 * resolves with what the form finished with, null when cancelled.
 */
export function showFormDialog<T>(
  render: (done: (result: T | null) => void) => JSX.Element,
  className = 'jp-trainhub-submit-dialog'
): Promise<T | null> {
  return new Promise(resolve => {
    let widget: ReactWidget | null = null;
    const done = (result: T | null) => {
      widget?.dispose();
      resolve(result);
    };
    widget = ReactWidget.create(
      <div className="jp-Dialog-content jp-trainhub-submit-dialog-content">{render(done)}</div>
    );
    widget.addClass('jp-Dialog');
    widget.addClass('jp-trainhub-submit-dialog');
    widget.addClass(className);
    widget.node.setAttribute('role', 'dialog');
    Widget.attach(widget, document.body);
  });
}

/**
 * A button of a form dialog's footer, styled as Lab's own dialogs style theirs: "accept" is
 * the form's submit button, the others do what ``onClick`` says.
 */
export function DialogButton(props: {
  label: string;
  kind?: 'accept' | 'reject';
  disabled?: boolean;
  title?: string;
  onClick?: () => void;
}): JSX.Element {
  const mod = props.kind ? ` jp-mod-${props.kind}` : '';
  return (
    <button
      type={props.kind === 'accept' ? 'submit' : 'button'}
      className={`jp-Dialog-button${mod} jp-mod-styled`}
      disabled={props.disabled}
      title={props.title}
      onClick={props.onClick}
    >
      <span className="jp-Dialog-buttonLabel">{props.label}</span>
    </button>
  );
}
