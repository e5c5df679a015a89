// `gpumem completion bash|zsh|fish` and `gpumem completion man`: the shell completions and the
// man page, written from the CLI11 app itself (its commands, options, words and descriptions), so
// they cannot drift from it; the build writes them and `cmake --install` installs them.
#include <CLI/CLI.hpp>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gpumem/version.hpp"
#include "usage.hpp"

namespace gpumem::cli {
namespace {

// What an option takes, for completion: nothing (a flag), one of its words, a file, a number.
struct OptionModel {
  std::vector<std::string> names;  // "-i", "--interval"
  std::string description;
  std::string type;  // "SECONDS", "exact|sampled|auto", "TEXT"
  bool takes_value = false;
  std::vector<std::string> words;  // for a word option
  bool number = false;
};

struct CommandModel {
  std::string name;
  std::string description;
  std::string usage;
  std::string footer;
  std::vector<OptionModel> options;
  bool takes_files = false;        // positional files (report, attribution)
  std::vector<std::string> words;  // a positional that is one of these words
  bool takes_command = false;      // run: a command line after its options
};

std::vector<std::string> completion_split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::stringstream stream(text);
  for (std::string part; std::getline(stream, part, separator);) parts.push_back(part);
  return parts;
}

std::vector<OptionModel> option_models(const CLI::App& command) {
  std::vector<OptionModel> models;
  for (const CLI::Option* option : command.get_options()) {
    if (option->get_positional()) continue;
    OptionModel model;
    for (const std::string& name : option->get_snames()) model.names.push_back("-" + name);
    for (const std::string& name : option->get_lnames()) model.names.push_back("--" + name);
    model.description = option->get_description();
    model.takes_value = option->get_items_expected_max() != 0;  // not a flag
    model.type = option->get_type_name();
    if (model.type.find('|') != std::string::npos) model.words = completion_split(model.type, '|');
    model.number = model.type != "TEXT" && model.words.empty();  // TEXT: a file name
    models.push_back(model);
  }
  return models;
}

std::vector<CommandModel> command_models(const CLI::App& app) {
  std::vector<CommandModel> models;
  for (const CLI::App* sub : app.get_subcommands({})) {
    if (sub->get_group().empty()) continue;  // hidden
    CommandModel model{sub->get_name(), sub->get_description(), usage_line(*sub), sub->get_footer(),
                       option_models(*sub)};
    for (const CLI::Option* option : sub->get_options()) {
      if (!option->get_positional()) continue;
      const std::string type = option->get_type_name();
      if (type.find('|') != std::string::npos) {
        model.words = completion_split(type, '|');
      } else {
        model.takes_files = true;
      }
    }
    model.takes_command = sub->get_prefix_command();
    models.push_back(model);
  }
  return models;
}

std::string completion_join(const std::vector<std::string>& words,
                            const std::string& separator = " ") {
  std::string text;
  for (const std::string& word : words) text += (text.empty() ? "" : separator) + word;
  return text;
}

std::string bash_script(const CLI::App& app) {
  std::ostringstream out;
  const std::vector<CommandModel> commands = command_models(app);
  std::vector<std::string> names;
  for (const CommandModel& command : commands) names.push_back(command.name);
  for (const OptionModel& option : option_models(app)) {
    for (const std::string& name : option.names) names.push_back(name);
  }
  out << "# bash completion for gpumem (written by `gpumem completion bash`)\n"
         "_gpumem() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}\n"
         "  local command='' at=0 i\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in -*) ;; *) command=${COMP_WORDS[i]}; at=$i; break ;; esac\n"
         "  done\n"
         "  COMPREPLY=()\n"
         "  case $command in\n"
         "    '')\n"
         "      COMPREPLY=($(compgen -W '"
      << completion_join(names) << "' -- \"$cur\"))\n      ;;\n";
  for (const CommandModel& command : commands) {
    out << "    " << command.name << ")\n";
    if (command.takes_command) {
      // After "--" (or the command's first word) the words are the command's own.
      out << "      for ((i = at + 1; i < COMP_CWORD; i++)); do\n"
             "        if [[ ${COMP_WORDS[i]} == -- ]]; then\n"
             "          if ((i + 1 == COMP_CWORD)); then COMPREPLY=($(compgen -c -- \"$cur\"));\n"
             "          else COMPREPLY=($(compgen -f -- \"$cur\")); fi\n"
             "          return\n"
             "        fi\n"
             "      done\n";
    }
    std::vector<std::string> options;
    out << "      case $prev in\n";
    for (const OptionModel& option : command.options) {
      for (const std::string& name : option.names) options.push_back(name);
      if (!option.takes_value) continue;
      out << "        " << completion_join(option.names, "|") << ") ";
      if (!option.words.empty()) {
        out << "COMPREPLY=($(compgen -W '" << completion_join(option.words) << "' -- \"$cur\")); ";
      } else if (!option.number) {
        out << "COMPREPLY=($(compgen -f -- \"$cur\")); ";
      }
      out << "return ;;\n";
    }
    out << "      esac\n"
        << "      if [[ $cur == -* ]]; then\n"
        << "        COMPREPLY=($(compgen -W '" << completion_join(options) << "' -- \"$cur\"))\n";
    if (!command.words.empty()) {
      out << "      elif ((COMP_CWORD == at + 1)); then\n        COMPREPLY=($(compgen -W '"
          << completion_join(command.words) << "' -- \"$cur\"))\n";
    }
    if (command.takes_files) out << "      else\n        COMPREPLY=($(compgen -f -- \"$cur\"))\n";
    if (command.takes_command) out << "      else\n        COMPREPLY=($(compgen -c -- \"$cur\"))\n";
    out << "      fi\n      ;;\n";
  }
  out << "  esac\n"
         "}\n"
         "complete -F _gpumem gpumem\n";
  return out.str();
}

// Text inside a zsh single-quoted _arguments description: no quotes, brackets or colons.
std::string zsh_text(std::string text) {
  for (char& c : text) {
    if (c == '\'') c = '`';
    if (c == '[') c = '(';
    if (c == ']') c = ')';
    if (c == ':') c = ',';
  }
  return text;
}

std::string zsh_option_specs(const std::vector<OptionModel>& options, const std::string& indent) {
  std::string specs;
  for (const OptionModel& option : options) {
    for (const std::string& name : option.names) {
      std::string spec = name + (option.takes_value && name.rfind("--", 0) == 0 ? "=" : "") + "[" +
                         zsh_text(option.description) + "]";
      if (option.takes_value) {
        if (!option.words.empty()) {
          spec += ":" + zsh_text(option.type) + ":(" + completion_join(option.words) + ")";
        } else if (option.number) {
          spec += ":" + zsh_text(option.type) + ": ";
        } else {
          spec += ":file:_files";
        }
      }
      specs += " \\\n" + indent + "'" + spec + "'";
    }
  }
  return specs;
}

std::string zsh_script(const CLI::App& app) {
  std::ostringstream out;
  out << "#compdef gpumem\n"
         "# zsh completion for gpumem (written by `gpumem completion zsh`)\n"
         "_gpumem() {\n"
         "  local curcontext=$curcontext state line\n"
         "  local -a commands\n"
         "  commands=(\n";
  const std::vector<CommandModel> commands = command_models(app);
  for (const CommandModel& command : commands) {
    out << "    '" << command.name << ":" << zsh_text(command.description) << "'\n";
  }
  out << "  )\n"
         "  _arguments -C"
      << zsh_option_specs(option_models(app), "    ")
      << " \\\n    '1:command:->command' \\\n    '*::argument:->argument'\n"
         "  case $state in\n"
         "    command) _describe -t commands 'gpumem command' commands ;;\n"
         "    argument)\n"
         "      case $words[1] in\n";
  for (const CommandModel& command : commands) {
    out << "        " << command.name << ")\n          _arguments"
        << zsh_option_specs(command.options, "            ");
    if (command.takes_files) out << " \\\n            '*:file:_files'";
    if (!command.words.empty())
      out << " \\\n            '1:word:(" << completion_join(command.words) << ")'";
    if (command.takes_command) out << " \\\n            '*::command:_normal'";
    out << "\n          ;;\n";
  }
  out << "      esac\n"
         "      ;;\n"
         "  esac\n"
         "}\n"
         "_gpumem \"$@\"\n";
  return out.str();
}

std::string fish_text(const std::string& text) {
  std::string quoted = "'";
  for (const char c : text) {
    if (c == '\'' || c == '\\') quoted += '\\';
    quoted += c;
  }
  return quoted + "'";
}

std::string fish_options(const std::vector<OptionModel>& options, const std::string& condition) {
  std::string lines;
  for (const OptionModel& option : options) {
    std::string line = "complete -c gpumem -n " + fish_text(condition);
    for (const std::string& name : option.names) {
      line +=
          (name.rfind("--", 0) == 0 ? " -l " : " -s ") + name.substr(name.find_first_not_of('-'));
    }
    if (option.takes_value) {
      line += option.words.empty() && !option.number ? " -r -F" : " -x";
      if (!option.words.empty()) line += " -a " + fish_text(completion_join(option.words));
    }
    lines += line + " -d " + fish_text(option.description) + "\n";
  }
  return lines;
}

std::string fish_script(const CLI::App& app) {
  std::ostringstream out;
  const std::vector<CommandModel> commands = command_models(app);
  out << "# fish completion for gpumem (written by `gpumem completion fish`)\n"
         "complete -c gpumem -f\n"
      << fish_options(option_models(app), "__fish_use_subcommand");
  for (const CommandModel& command : commands) {
    out << "complete -c gpumem -n __fish_use_subcommand -a " << command.name << " -d "
        << fish_text(command.description) << "\n";
  }
  for (const CommandModel& command : commands) {
    const std::string condition = "__fish_seen_subcommand_from " + command.name;
    out << fish_options(command.options, condition);
    if (command.takes_files) out << "complete -c gpumem -n " << fish_text(condition) << " -F\n";
    if (!command.words.empty()) {
      out << "complete -c gpumem -n " << fish_text(condition) << " -a "
          << fish_text(completion_join(command.words)) << "\n";
    }
    if (command.takes_command) {
      out << "complete -c gpumem -n " << fish_text(condition)
          << " -a '(__fish_complete_subcommand --fcs-skip=2)'\n";
    }
  }
  return out.str();
}

// Text for roff: backslashes and hyphens escaped, no line taken for a request.
std::string roff(const std::string& text) {
  std::string escaped;
  for (const char c : text) {
    if (c == '\\') {
      escaped += "\\e";
    } else if (c == '-') {
      escaped += "\\-";
    } else if (c == '\n') {
      escaped += "\n.br\n";
    } else {
      escaped += c;
    }
  }
  return (!escaped.empty() && (escaped.front() == '.' || escaped.front() == '\'')) ? "\\&" + escaped
                                                                                   : escaped;
}

std::string roff_options(const std::vector<OptionModel>& options) {
  std::string text;
  for (const OptionModel& option : options) {
    std::string names;
    for (const std::string& name : option.names) {
      names += (names.empty() ? "" : ", ") + std::string("\\fB") + roff(name) + "\\fR";
    }
    if (option.takes_value) names += " \\fI" + roff(option.type) + "\\fR";
    text += ".TP\n" + names + "\n" + roff(option.description) + "\n";
  }
  return text;
}

std::string man_page(const CLI::App& app) {
  std::ostringstream out;
  out << ".TH GPUMEM 1 \"\" \"gpumem " << gpumem::version << "\" \"User Commands\"\n"
      << ".\\\" Written by `gpumem completion man` from the command's own definition.\n"
      << ".SH NAME\ngpumem \\- "
      << roff(app.get_description().substr(app.get_description().find(": ") + 2))
      << "\n.SH SYNOPSIS\n";
  const std::vector<CommandModel> commands = command_models(app);
  for (const CommandModel& command : commands) out << ".br\n" << roff(command.usage) << "\n";
  out << ".SH DESCRIPTION\n"
         "gpumem lists and watches the GPUs' memory and the processes using it, measures the "
         "peak GPU memory of a command (exactly where CUPTI works, else by sampling), combines "
         "the reports of a job's ranks, shows what held the memory at a peak or an "
         "out\\-of\\-memory failure, and serves the figures to Prometheus.\n"
         ".SH OPTIONS\n"
      << roff_options(option_models(app)) << ".SH COMMANDS\n";
  for (const CommandModel& command : commands) {
    out << ".SS " << command.name << "\n"
        << ".B " << roff(command.usage) << "\n.PP\n"
        << roff(command.description) << ".\n";
    if (!command.footer.empty()) out << ".PP\n" << roff(command.footer) << "\n";
    out << roff_options(command.options);
  }
  out << ".SH \"EXIT STATUS\"\n"
         ".TP\n.B 0\nsuccess\n"
         ".TP\n.B 1\na failure: a file that cannot be read or written, a GPU that cannot be read\n"
         ".TP\n.B 2\nbad usage: an unknown command or option, a missing argument, a value out "
         "of range or not understood (one line on standard error names it; a missing argument "
         "is followed by the command's usage line)\n"
         ".PP\n\\fBgpumem run\\fR exits with the status of the command it ran.\n"
         ".SH \"SEE ALSO\"\n"
         "\\fBnvidia\\-smi\\fR(1); the full documentation: docs/cli.md in gpumem's sources.\n";
  return out.str();
}

}  // namespace

void add_completion_command(CLI::App& app, int& exit_code) {
  auto shell = std::make_shared<std::string>();
  CLI::App* command = app.add_subcommand(
      "completion", "Print the shell completion script for bash, zsh or fish, or the man page");
  word_option(
      *command,
      command->add_option("shell", *shell, "bash, zsh, fish or man (the man page)")->required(),
      {{"bash", "bash"}, {"zsh", "zsh"}, {"fish", "fish"}, {"man", "man"}});
  set_usage(*command, "gpumem completion bash|zsh|fish|man");
  command->footer("E.g. source <(gpumem completion bash); the package installs all of them.");
  const CLI::App* top = &app;
  command->callback([shell, top, &exit_code] {
    if (*shell == "bash") std::cout << bash_script(*top);
    if (*shell == "zsh") std::cout << zsh_script(*top);
    if (*shell == "fish") std::cout << fish_script(*top);
    if (*shell == "man") std::cout << man_page(*top);
    exit_code = 0;
  });
}

}  // namespace gpumem::cli
