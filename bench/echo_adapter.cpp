// The cheapest adapter that speaks the line protocol (adapters/protocol.h): the identity layer. It answers
// {"id":N,"x":[...]} with {"id":N,"y":[...]} by renaming the key, so what bench_check measures through it is
// the protocol (formatting, pipes, parsing, process switches), not a layer.
#include <iostream>
#include <string>

int main() {
    std::ios::sync_with_stdio(false);
    std::string line;
    while (std::getline(std::cin, line)) {
        const std::string::size_type at = line.find("\"x\":");
        if (at == std::string::npos) {
            std::cout << "{\"id\":0,\"error\":\"echo adapter: no \\\"x\\\" in the request\"}\n" << std::flush;
            continue;
        }
        line[at + 1] = 'y';
        std::cout << line << '\n' << std::flush;
    }
    return 0;
}
