/**
 * Conditional sections (docs/typescript.md, "Rendering"), as the service's
 * promptsvc/templating/sections.py: `{{#name}}...{{/name}}` keeps its inside when the
 * boolean `name` is true, `{{^name}}...{{/name}}` when it is false. A tag is `{{#`, `{{^`
 * or `{{/`, optional whitespace, a name, optional whitespace, `}}`; anything else is
 * text. Sections nest at most 4 deep. A section tag alone on its line (besides spaces
 * and tabs) takes the whole line, its line ending included (Mustache's standalone rule).
 * Mistakes name the tag and its line and column, counted from 1 in characters.
 */

export const MAX_DEPTH = 4;

/** `{{#name}}parts{{/name}}` (`inverted`: `{{^name}}`). */
export interface Section {
  readonly name: string;
  readonly inverted: boolean;
  readonly parts: readonly Part[];
}

export type Part = string | Section;

/** A section tag without its pair, crossing another, or nested too deep. */
export class SectionError extends Error {
  override name = "SectionError";
}

/** Matches Python's `\s*`, as the service's tag pattern does (template.ts says why). */
export function tagPattern(space: string): RegExp {
  return new RegExp(`\\{\\{([#^/])${space}([A-Za-z_][A-Za-z0-9_.]*)${space}\\}\\}`, "g");
}

function lineStart(text: string, index: number): number {
  return index === 0 ? 0 : text.lastIndexOf("\n", index - 1) + 1;
}

function where(text: string, index: number): string {
  let line = 1;
  for (let i = text.indexOf("\n"); i !== -1 && i < index; i = text.indexOf("\n", i + 1)) line += 1;
  // Characters (code points), as Python counts them, not UTF-16 units.
  const column = Array.from(text.slice(lineStart(text, index), index)).length + 1;
  return `line ${line}, column ${column}`;
}

const BLANK = /^[ \t]*$/;

/** The whole line around the tag at `start..end` when only spaces and tabs share it. */
function lineSpan(text: string, start: number, end: number): [number, number] | null {
  const from = lineStart(text, start);
  if (!BLANK.test(text.slice(from, start))) return null;
  const lineEnd = text.indexOf("\n", end);
  let rest = lineEnd < 0 ? text.slice(end) : text.slice(end, lineEnd);
  if (lineEnd >= 0 && rest.endsWith("\r")) rest = rest.slice(0, -1);
  if (!BLANK.test(rest)) return null;
  return [from, lineEnd < 0 ? text.length : lineEnd + 1];
}

const tag = (sigil: string, name: string): string => `{{${sigil}${name}}}`;

interface Open {
  name: string;
  inverted: boolean;
  at: number;
  parts: Part[];
}

const CACHE = new Map<string, readonly Part[]>();
const CACHE_SIZE = 256;

/** `text` as plain text and sections (cached: a version's content is parsed once); SectionError when a tag is wrong. */
export function parse(text: string, pattern: RegExp): readonly Part[] {
  const cached = CACHE.get(text);
  if (cached !== undefined) return cached;
  const parsed = parseText(text, pattern);
  if (CACHE.size >= CACHE_SIZE) CACHE.delete(CACHE.keys().next().value as string);
  CACHE.set(text, parsed);
  return parsed;
}

function parseText(text: string, pattern: RegExp): readonly Part[] {
  if (!text.includes("{{#") && !text.includes("{{^") && !text.includes("{{/")) return text ? [text] : [];
  const root: Part[] = [];
  const stack: Open[] = [];
  let pos = 0;
  for (const match of text.matchAll(pattern)) {
    const sigil = match[1] as string;
    const name = match[2] as string;
    const start = match.index as number;
    const end = start + match[0].length;
    const [cut, after] = lineSpan(text, start, end) ?? [start, end];
    const parts = stack.length > 0 ? (stack[stack.length - 1] as Open).parts : root;
    if (cut > pos) parts.push(text.slice(pos, cut));
    pos = after;
    if (sigil !== "/") {
      if (stack.length === MAX_DEPTH) {
        throw new SectionError(
          `section ${tag(sigil, name)} at ${where(text, start)} is nested ${MAX_DEPTH + 1} deep: sections nest at most ${MAX_DEPTH} deep`,
        );
      }
      stack.push({ name, inverted: sigil === "^", at: start, parts: [] });
      continue;
    }
    if (!stack.some((opened) => opened.name === name)) {
      throw new SectionError(`closing tag ${tag("/", name)} at ${where(text, start)} has no open section ${tag("#", name)} or ${tag("^", name)}`);
    }
    const top = stack.pop() as Open;
    if (top.name !== name) {
      throw new SectionError(
        `closing tag ${tag("/", name)} at ${where(text, start)} crosses section ${tag(top.inverted ? "^" : "#", top.name)} opened at ${where(text, top.at)}: close it with ${tag("/", top.name)} first`,
      );
    }
    const section: Section = Object.freeze({ name: top.name, inverted: top.inverted, parts: Object.freeze(top.parts) });
    (stack.length > 0 ? (stack[stack.length - 1] as Open).parts : root).push(section);
  }
  const top = stack[stack.length - 1];
  if (top !== undefined) {
    throw new SectionError(
      `section ${tag(top.inverted ? "^" : "#", top.name)} at ${where(text, top.at)} is never closed: end it with ${tag("/", top.name)}`,
    );
  }
  if (pos < text.length) root.push(text.slice(pos));
  return Object.freeze(root);
}

/** Every variable into `seen` (first-seen order), each into `sections` or `placeholders` by its use. */
export function collect(parts: readonly Part[], placeholder: RegExp, seen: Set<string>, sections: Set<string>, placeholders: Set<string>): void {
  for (const part of parts) {
    if (typeof part === "string") {
      for (const match of part.matchAll(placeholder)) {
        seen.add(match[1] as string);
        placeholders.add(match[1] as string);
      }
    } else {
      seen.add(part.name);
      sections.add(part.name);
      collect(part.parts, placeholder, seen, sections, placeholders);
    }
  }
}

/** Render `parts`: placeholders from `filled`, a section kept when its variable's text is `true` (`{{^}}`: when not). */
export function fill(parts: readonly Part[], placeholder: RegExp, filled: ReadonlyMap<string, string>, out: string[]): void {
  for (const part of parts) {
    if (typeof part === "string") {
      out.push(part.replace(placeholder, (whole, name: string) => filled.get(name) ?? whole));
    } else if ((filled.get(part.name) === "true") !== part.inverted) {
      fill(part.parts, placeholder, filled, out);
    }
  }
}
