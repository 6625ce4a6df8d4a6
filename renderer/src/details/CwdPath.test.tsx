import '../test/setup.js';
import { render, screen } from '@testing-library/react';
import { describe, expect, it } from 'vitest';
import { CwdPath, splitForMiddleEllipsis } from './CwdPath.js';

describe('CwdPath', () => {
  it('keeps the last folder whole and lets the start shrink', () => {
    expect(splitForMiddleEllipsis('/home/agent/projects/deep-folder')).toEqual({ head: '/home/agent/projects/', tail: 'deep-folder' });
    expect(splitForMiddleEllipsis('/tmp')).toEqual({ head: '', tail: '/tmp' });
    expect(splitForMiddleEllipsis('/srv/data/')).toEqual({ head: '/srv/', tail: 'data/' });
    expect(splitForMiddleEllipsis('/')).toEqual({ head: '', tail: '/' });
  });

  it('shows the full path as its title', () => {
    render(<CwdPath path="/home/agent/projects/deep-folder" testId="p" />);
    const el = screen.getByTestId('p');
    expect(el.title).toBe('/home/agent/projects/deep-folder');
    expect(el.querySelector('.cwd-tail')?.textContent).toBe('deep-folder');
    expect(el.textContent).toBe('/home/agent/projects/deep-folder');
  });
});
