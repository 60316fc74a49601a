import {
  ago,
  draftProblem,
  heading,
  IComment,
  markMentions,
  MAX_BODY,
  mentionParts
} from '../comments';

const comment = (fields: Partial<IComment> = {}): IComment => ({
  id: 'c-1',
  kind: 'job',
  target: 'train-1a2b',
  user: 'ada',
  created_at: 1000,
  edited_at: null,
  body: 'hi',
  mentions: [],
  mine: true,
  ...fields
});

describe('comments', () => {
  it('refuses a blank or an overlong draft, and takes any other', () => {
    expect(draftProblem('  \n')).toBe('Write something first.');
    expect(draftProblem('x'.repeat(MAX_BODY + 1))).toContain('at most 10000');
    expect(draftProblem('@bo look')).toBeNull();
  });

  it('says who wrote a comment, when, and whether it was edited', () => {
    expect(heading(comment(), 1030)).toBe('ada · just now');
    expect(heading(comment({ edited_at: 2000 }), 1000 + 5 * 60)).toBe('ada · 5 min ago · edited');
    expect(ago(0, 3 * 3600)).toBe('3 h ago');
    expect(ago(0, 2 * 86400 + 5)).toBe('2 d ago');
  });

  it('marks the mentions of teammates and leaves any other @name plain', () => {
    expect(mentionParts('thanks @bo, and @zed. mail x@bo', ['bo'])).toEqual([
      { text: 'thanks ', mention: false },
      { text: '@bo', mention: true },
      { text: ', and @zed. mail x@bo', mention: false }
    ]);
    expect(mentionParts('@bo.', ['bo'])).toEqual([
      { text: '@bo', mention: true },
      { text: '.', mention: false }
    ]);
    expect(mentionParts('@bob', ['bo'])).toEqual([{ text: '@bob', mention: false }]);
  });
});

describe('markMentions', () => {
  it('marks mentions in text, never in code or links, and keeps the rest as text', () => {
    const root = document.createElement('div');
    const p = document.createElement('p');
    p.append('ask @bo or @zed, ');
    const code = document.createElement('code');
    code.textContent = '@bo';
    const link = document.createElement('a');
    link.textContent = '@bo';
    p.append(code, ' ', link, ' <b>@bo</b>');
    root.append(p);
    markMentions(root, ['bo']);
    const marks = [...root.querySelectorAll('.jp-trainhub-mention')].map(m => m.textContent);
    expect(marks).toEqual(['@bo', '@bo']);
    expect(root.querySelector('b')).toBeNull(); // the writer's text stays text
    expect(root.textContent).toBe('ask @bo or @zed, @bo @bo <b>@bo</b>');
  });
});
