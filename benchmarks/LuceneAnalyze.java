// Runs the SyllabusQA authors' BM25 analyzer (Pyserini's get_lucene_analyzer(stemmer="porter"), i.e.
// Anserini's DefaultEnglishAnalyzer.newStemmingInstance("porter")) over texts, for
// benchmarks/search_top1_agreement.py. Input: one base64 (UTF-8) text per line on stdin. Output: the
// analyzed terms of each text on one line, tab-separated. Run with the Anserini jar that Pyserini ships:
//   java -cp anserini-0.22.1-fatjar.jar benchmarks/LuceneAnalyze.java [--no-stem] < texts > terms
import io.anserini.analysis.AnalyzerUtils;
import io.anserini.analysis.DefaultEnglishAnalyzer;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.apache.lucene.analysis.Analyzer;

public class LuceneAnalyze {
  public static void main(String[] args) throws Exception {
    boolean stem = !(args.length > 0 && args[0].equals("--no-stem"));
    Analyzer analyzer =
        stem
            ? DefaultEnglishAnalyzer.newStemmingInstance("porter")
            : DefaultEnglishAnalyzer.newNonStemmingInstance();
    System.err.println("lucene " + org.apache.lucene.util.Version.LATEST);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    BufferedWriter out =
        new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8));
    String line;
    while ((line = in.readLine()) != null) {
      String text = new String(Base64.getDecoder().decode(line), StandardCharsets.UTF_8);
      out.write(String.join("\t", AnalyzerUtils.analyze(analyzer, text)));
      out.write("\n");
    }
    out.flush();
  }
}
