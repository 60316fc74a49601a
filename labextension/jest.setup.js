/** What jsdom lacks and the charts' uPlot needs: a canvas context and matchMedia. */
require('jest-canvas-mock');

globalThis.matchMedia ??= query => ({
  matches: false,
  media: query,
  addEventListener() {},
  removeEventListener() {}
});
