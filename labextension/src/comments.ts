/**
 * Comments on a job, a sweep, a pipeline run or a model version (GET/POST comments,
 * PATCH/DELETE comments/{id}; see openapi.yaml): the answer's shapes and the pure parts of the
 * Comments tab — a comment's heading, a draft's check, and a rendered comment's mentions marked.
 */

/** What is commented on, as the API spells it. */
export type CommentKind = 'job' | 'sweep' | 'pipeline_run' | 'model_version';

export interface IComment {
  id: string;
  kind: string;
  target: string;
  user: string;
  created_at: number;
  edited_at: number | null;
  /** Markdown, as written. */
  body: string;
  /** The teammates it mentions (resolved by the server; an unknown @name is plain text). */
  mentions: string[];
  /** Whether the reader wrote it, and so may edit or delete it. */
  mine: boolean;
}

export interface ICommentList {
  comments: IComment[];
}

/** The server's limit on a comment's Markdown (trainhub.comments.model.MAX_BODY). */
export const MAX_BODY = 10000;

/** Why a draft cannot be sent, or null when it can. */
export function draftProblem(body: string): string | null {
  if (!body.trim()) {
    return 'Write something first.';
  }
  if (body.length > MAX_BODY) {
    return `A comment holds at most ${MAX_BODY} characters (this one ${body.length}).`;
  }
  return null;
}

/** How long ago, for a heading: "just now", "5 min ago", "3 h ago", "2 d ago". */
export function ago(epochSeconds: number, nowSeconds: number): string {
  const s = Math.max(0, Math.round(nowSeconds - epochSeconds));
  if (s < 60) {
    return 'just now';
  }
  if (s < 3600) {
    return `${Math.floor(s / 60)} min ago`;
  }
  if (s < 86400) {
    return `${Math.floor(s / 3600)} h ago`;
  }
  return `${Math.floor(s / 86400)} d ago`;
}

/** A comment's heading: who, when, and whether it was edited since. */
export function heading(comment: IComment, nowSeconds: number): string {
  const edited = comment.edited_at === null ? '' : ' · edited';
  return `${comment.user} · ${ago(comment.created_at, nowSeconds)}${edited}`;
}

/** One piece of a rendered text node: plain text, or the mention of a teammate. */
export interface ITextPart {
  text: string;
  mention: boolean;
}

/**
 * `text` cut around each `@name` of `mentions` (as the server's pattern finds one: not after a
 * word character, and not going on with one), so that a mention can be marked; the rest,
 * an unknown @name included, stays plain text.
 */
export function mentionParts(text: string, mentions: string[]): ITextPart[] {
  const known = new Set(mentions);
  const parts: ITextPart[] = [];
  const pattern = /(^|[^\w@./-])@([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9_])?)/g;
  let at = 0;
  for (let m = pattern.exec(text); m; m = pattern.exec(text)) {
    if (!known.has(m[2])) {
      continue;
    }
    const start = m.index + m[1].length;
    if (start > at) {
      parts.push({ text: text.slice(at, start), mention: false });
    }
    parts.push({ text: `@${m[2]}`, mention: true });
    at = start + 1 + m[2].length;
  }
  if (at < text.length) {
    parts.push({ text: text.slice(at), mention: false });
  }
  return parts;
}

/** Code, preformatted text and links keep their text as written: no mention is marked there. */
const UNMARKED = new Set(['CODE', 'PRE', 'A']);

/** Wrap each mention of a teammate in `root`'s text in a span (text nodes only). */
export function markMentions(root: HTMLElement, mentions: string[]): void {
  if (!mentions.length) {
    return;
  }
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts: Text[] = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    let inside = node.parentElement;
    while (inside && inside !== root && !UNMARKED.has(inside.tagName)) {
      inside = inside.parentElement;
    }
    if (!inside || inside === root) {
      texts.push(node as Text);
    }
  }
  for (const text of texts) {
    const parts = mentionParts(text.data, mentions);
    if (!parts.some(p => p.mention)) {
      continue;
    }
    const pieces = parts.map(p => {
      if (!p.mention) {
        return document.createTextNode(p.text);
      }
      const span = document.createElement('span');
      span.className = 'jp-trainhub-mention';
      span.textContent = p.text;
      return span;
    });
    text.replaceWith(...pieces);
  }
}
