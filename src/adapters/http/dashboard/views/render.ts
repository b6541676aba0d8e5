import type { VNode } from 'preact';
import { renderToString } from 'preact-render-to-string';

/** A complete HTML document from a page's `<html>` element. Escaping is the renderer's, never ours. */
export const renderDocument = (page: VNode): string => `<!DOCTYPE html>${renderToString(page)}`;
