// esbuild's `text` loader turns imported .css files into strings.
declare module '*.css' {
  const text: string;
  export default text;
}
