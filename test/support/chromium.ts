import { findChromium } from '../../tools/prerequisites.js';

/**
 * The Chromium (or Chrome) the browser specs drive, found as `npm test`'s prerequisite check finds it
 * (tools/prerequisites.js: `CHROMIUM_PATH`, else chromium / chromium-browser / google-chrome on
 * PATH, else the macOS applications). Never skips: without one it throws saying how to install it.
 */
export function chromiumPath(): string {
  const path = findChromium();
  if (!path) {
    throw new Error(
      'This test needs a real Chromium or Chrome, and none was found (CHROMIUM_PATH, or chromium / chromium-browser / ' +
        'google-chrome on PATH). Install it: `sudo apt-get install chromium` (Debian), `sudo snap install chromium` (Ubuntu), ' +
        '`brew install --cask chromium` (macOS); or set CHROMIUM_PATH to a Chromium/Chrome binary.',
    );
  }
  return path;
}
