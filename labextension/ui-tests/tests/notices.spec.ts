/**
 * A notice posted to the server (as the hub's idle-GPU service posts its warning) shows in
 * JupyterLab as a notification, once: a reload does not show it again.
 */
import { expect, test } from './fixtures';

test('a notice posted to the server shows as a notification, once', async ({ page }) => {
  const message = `This server's GPUs stayed idle: it will be stopped (${Date.now()})`;
  const posted = await page.request.post('/trainhub/api/notices', {
    data: { level: 'warning', message }
  });
  expect(posted.status()).toBe(201);

  const toast = page.locator('.Toastify__toast').filter({ hasText: message });
  await expect(toast).toBeVisible({ timeout: 30 * 1000 }); // the next poll, within 15 s
  await expect(toast).toHaveClass(/Toastify__toast--warning/);

  // The browser kept the last id shown: after a reload the first read starts past it.
  const { id } = await posted.json();
  const read = page.waitForResponse(r => r.url().includes('/trainhub/api/notices?after='));
  await page.reload();
  const first = await read;
  expect(new URL(first.url()).searchParams.get('after')).toBe(String(id));
  expect(await first.json()).toEqual({ notices: [] });
});
