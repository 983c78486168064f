// YAML documents read from user files: parse errors and alias bombs (billion laughs) become one-line input errors.
import { parseDocument, type Document } from 'yaml';
import { InputError } from './errors.js';

/** Alias expansions a document may make before it is refused (the yaml package's own default). */
export const MAX_ALIAS_COUNT = 100;

/** A parsed document as plain values, refusing excessive aliasing; `where` names the file in the error. */
export function yamlToJS(doc: Document.Parsed | Document, where: string): unknown {
  try {
    return doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (err) {
    if (err instanceof ReferenceError) throw new InputError(`${where}: ${err.message.split('\n')[0]} (YAML aliases expand too far or do not resolve)`);
    throw err;
  }
}

/** Parse YAML text to plain values; InputError naming `where` for invalid YAML or an alias bomb. */
export function parseYamlText(text: string, where: string): unknown {
  const doc = parseDocument(text, { prettyErrors: false });
  if (doc.errors.length > 0) throw new InputError(`${where}: not valid YAML (${doc.errors[0]!.message.split('\n')[0]})`);
  return yamlToJS(doc, where);
}
