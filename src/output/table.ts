// Shared cli-table3 options so every console table looks the same.

/** No colours in headers or borders: chalk decides colour, and piped output stays plain. */
export const PLAIN_STYLE = { style: { head: [] as string[], border: [] as string[] } };

/** Border characters without a rule between body rows, for long tables. */
export const NO_ROW_RULES = { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' };
