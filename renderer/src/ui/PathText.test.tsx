import '../test/setup.js';
import { render } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { PathText } from './PathText.js';

describe('PathText', () => {
  it('offers a line break after each / and : only, and keeps the text as it is', () => {
    const { container } = render(
      <span>
        <PathText text="/home/agent/projects/a-rather-long-folder-name:v2" />
      </span>,
    );
    expect(container.textContent).toBe('/home/agent/projects/a-rather-long-folder-name:v2');
    expect(container.querySelectorAll('wbr')).toHaveLength(5);
    // Every break comes right after a separator: no name is cut for want of a better place.
    for (const w of container.querySelectorAll('wbr')) expect(w.previousSibling?.textContent?.slice(-1)).toMatch(/[/:]/);
  });
});
