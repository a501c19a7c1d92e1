/** The TSDoc the generators write above what they generate. */

/** A TSDoc block at `indent`, its text wrapped at 100 columns. */
export function docBlock(doc: string | undefined, indent: string): string[] {
  if (!doc) return [];
  const words = doc.split(/\s+/).filter(Boolean);
  const lines: string[] = [];
  let line = '';
  for (const w of words) {
    if (line && line.length + 1 + w.length > 100) {
      lines.push(line);
      line = w;
    } else line = line ? `${line} ${w}` : w;
  }
  if (line) lines.push(line);
  if (lines.length === 1 && indent.length + lines[0].length + 7 <= 140) return [`${indent}/** ${lines[0]} */`];
  return [`${indent}/**`, ...lines.map((l) => `${indent} * ${l}`), `${indent} */`];
}
