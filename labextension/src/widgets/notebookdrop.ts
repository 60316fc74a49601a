/**
 * Files dragged from JupyterLab's file browser onto a widget: Lumino's drag events, the drop
 * target's highlight, and the dropped paths (root-relative).
 */

/** The MIME type of the file browser's drag (its paths, root-relative). */
export const CONTENTS_MIME = 'application/x-jupyter-icontents';

const DRAG_EVENTS = ['lm-dragenter', 'lm-dragleave', 'lm-dragover', 'lm-drop'];

/** Send Lumino's drag events on `node` to `listener` (the widget's handleEvent). */
export function listenForDrags(node: HTMLElement, listener: EventListenerObject): void {
  for (const type of DRAG_EVENTS) {
    node.addEventListener(type, listener);
  }
}

export function stopListeningForDrags(node: HTMLElement, listener: EventListenerObject): void {
  for (const type of DRAG_EVENTS) {
    node.removeEventListener(type, listener);
  }
}

/**
 * One of Lumino's drag events on `node`: a drag of files is taken (the node shows it as a drop
 * target) and, dropped, its paths go to `drop`; any other drag is left alone.
 */
export function handleFileDrag(
  node: HTMLElement,
  event: Event,
  drop: (paths: string[]) => void
): void {
  const drag = event as Event & {
    mimeData?: { hasData(mime: string): boolean; getData(mime: string): unknown };
    proposedAction?: string;
    dropAction?: string;
  };
  if (!drag.mimeData?.hasData(CONTENTS_MIME)) {
    return;
  }
  event.preventDefault();
  event.stopPropagation();
  switch (event.type) {
    case 'lm-dragenter':
    case 'lm-dragover':
      node.classList.add('jp-mod-dropTarget');
      // The file browser offers a move: taken as is, though the file stays where it is.
      drag.dropAction = drag.proposedAction ?? 'move';
      break;
    case 'lm-dragleave':
      node.classList.remove('jp-mod-dropTarget');
      break;
    case 'lm-drop': {
      node.classList.remove('jp-mod-dropTarget');
      drag.dropAction = drag.proposedAction ?? 'move';
      const paths = drag.mimeData.getData(CONTENTS_MIME);
      drop(Array.isArray(paths) ? paths.map(String) : [String(paths)]);
      break;
    }
  }
}
