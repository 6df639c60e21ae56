/** Types of tools/embed-assets.js, for the specs that import it. */
export interface EmbeddedAsset {
  /** The asset under lib/ (absolute path). */
  readonly source: string;
  /** Its generated module, `<source>.embedded.ts`. */
  readonly module: string;
  /** The text the module must have. */
  readonly text: string;
}
export function embeddedAssets(root: string): EmbeddedAsset[];
export function staleAssets(root: string): EmbeddedAsset[];
