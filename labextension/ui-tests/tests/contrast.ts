/**
 * WCAG text contrast measured in the browser from computed styles: every element under a
 * root that shows text of its own, its colour composited over the backgrounds of it and its
 * ancestors (any CSS colour syntax, read back through a canvas).
 */
import { Locator } from '@playwright/test';

export interface ITextContrast {
  text: string;
  ratio: number;
  color: string;
  background: string;
}

/** The contrast of each piece of text under `root` (visible elements only). */
export async function textContrasts(root: Locator): Promise<ITextContrast[]> {
  return root.evaluate((el: Element) => {
    const canvas = document.createElement('canvas');
    canvas.width = canvas.height = 1;
    const ctx = canvas.getContext('2d', { willReadFrequently: true })!;
    const rgba = (css: string): [number, number, number, number] => {
      ctx.clearRect(0, 0, 1, 1);
      ctx.fillStyle = '#000';
      ctx.fillStyle = css;
      ctx.fillRect(0, 0, 1, 1);
      const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
      return [r, g, b, a / 255];
    };
    const over = (
      top: [number, number, number, number],
      bottom: [number, number, number]
    ): [number, number, number] => {
      // getImageData gives colours premultiplied back to straight: blend by alpha.
      const a = top[3];
      return [0, 1, 2].map(i => top[i] * a + bottom[i] * (1 - a)) as [number, number, number];
    };
    const luminance = (c: [number, number, number]) => {
      const [r, g, b] = c.map(v => {
        const s = v / 255;
        return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
      });
      return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const backgroundOf = (node: Element): [number, number, number] => {
      const chain: Element[] = [];
      for (let n: Element | null = node; n; n = n.parentElement) {
        chain.push(n);
      }
      let bg: [number, number, number] = [255, 255, 255];
      for (const n of chain.reverse()) {
        const c = rgba(getComputedStyle(n).backgroundColor);
        if (c[3] > 0) {
          bg = over(c, bg);
        }
      }
      return bg;
    };
    const out: { text: string; ratio: number; color: string; background: string }[] = [];
    const nodes = [el, ...Array.from(el.querySelectorAll('*'))];
    for (const node of nodes) {
      const own = Array.from(node.childNodes)
        .filter(c => c.nodeType === Node.TEXT_NODE)
        .map(c => c.textContent ?? '')
        .join('')
        .trim();
      const box = (node as HTMLElement).getBoundingClientRect?.();
      if (!own || !box || box.width === 0 || box.height === 0) {
        continue;
      }
      const style = getComputedStyle(node);
      if (style.visibility === 'hidden') {
        continue;
      }
      const bg = backgroundOf(node);
      const fg = over(rgba(style.color), bg);
      const [hi, lo] = [luminance(fg), luminance(bg)].sort((a, b) => b - a);
      out.push({
        text: own.slice(0, 40),
        ratio: Math.round(((hi + 0.05) / (lo + 0.05)) * 100) / 100,
        color: `rgb(${fg.map(Math.round).join(',')})`,
        background: `rgb(${bg.map(Math.round).join(',')})`
      });
    }
    return out;
  });
}

/** The texts under `root` below WCAG AA (4.5:1), as readable lines; empty when all pass. */
export async function belowAA(root: Locator, minimum = 4.5): Promise<string[]> {
  const all = await textContrasts(root);
  if (!all.length) {
    throw new Error('no text found to measure');
  }
  return all
    .filter(c => c.ratio < minimum)
    .map(c => `"${c.text}" ${c.ratio}:1 (${c.color} on ${c.background})`);
}
