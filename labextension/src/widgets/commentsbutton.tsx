/** The Comments button of a sweep's, a pipeline run's or a model version's view. */
import * as React from 'react';

import { CommentKind } from '../comments';
import { openComments } from './commentstab';

/** Opens the team's comments on `target` beside the view (commentstab.ts). */
export function CommentsButton(props: {
  kind: CommentKind;
  target: string;
  className?: string;
  title?: string;
}): JSX.Element {
  return (
    <button
      type="button"
      className={props.className ?? 'jp-mod-styled'}
      title={props.title}
      onClick={() => openComments(props.kind, props.target)}
    >
      Comments
    </button>
  );
}
